import fs from 'node:fs';
import { BadRequestException, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import { finalize, type Observable } from 'rxjs';
import { TableInspector, type UploadedFile } from '@abacus/catalog';

const SPOOLED_SUFFIXES = ['', '.csv', '.parquet'];

/**
 * Removes the spooled upload once the request is over, whatever happened (a form field that fails its
 * schema never reaches the handler), so no upload outlives its request in the temporary directory.
 */
export class UploadCleanupInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = ctx.switchToHttp().getRequest<Request>();
    return next.handle().pipe(
      finalize(() => {
        const spooled = req.file?.path;
        if (spooled) for (const suffix of SPOOLED_SUFFIXES) fs.rmSync(`${spooled}${suffix}`, { force: true });
      }),
    );
  }
}

/**
 * The spooled multipart file, or a 400 naming the `file` field. The server's path is multer's random
 * name plus the extension of the format (never anything taken from the client's file name).
 */
export function requireUpload(file: Express.Multer.File | undefined): UploadedFile & { release(): void } {
  if (!file) {
    throw new BadRequestException({
      statusCode: 400,
      error: 'Bad Request',
      message: 'Validation failed',
      issues: [{ path: 'file', message: 'a multipart file part named "file" is required', code: 'invalid_input' }],
    });
  }
  const problem = fileNameProblem(file.originalname);
  if (problem) {
    throw new BadRequestException({
      statusCode: 400,
      error: 'Bad Request',
      message: 'Validation failed',
      issues: [{ path: 'file', message: problem, code: 'invalid_input' }],
    });
  }
  const originalName = displayName(file.originalname);
  // readers choose the format by extension; the spooled file has none
  const spooled = `${file.path}.${TableInspector.formatOf(originalName)}`;
  fs.renameSync(file.path, spooled);
  return { path: spooled, originalName, release: () => fs.rmSync(spooled, { force: true }) };
}

/** Why a client's file name is refused: path parts (`../`, `/`, `\\`), control characters, or none at all. */
export function fileNameProblem(name: string): string | null {
  if (!name) return 'the file part has no file name';
  if (/[\\/]/.test(name) || name.split('.').every((p) => p === '')) {
    return `file name "${displayName(name)}" must be a plain name without directories (no "/", "\\" or "..")`;
  }
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'file name contains control characters';
  if (name.length > 255) return 'file name is longer than 255 characters';
  return null;
}

/** The client's file name as shown back in messages: its last path segment, printable, at most 200 characters. */
export function displayName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 200);
  return clean || 'upload';
}

import fs from 'node:fs';
import path from 'node:path';
import { BadRequestException } from '@nestjs/common';
import type { UploadedFile } from '@abacus/catalog';

/** The spooled multipart file, or a 400 naming the `file` field; the caller must release() it. */
export function requireUpload(file: Express.Multer.File | undefined): UploadedFile & { release(): void } {
  if (!file) {
    throw new BadRequestException({
      statusCode: 400,
      error: 'Bad Request',
      message: 'Validation failed',
      issues: [{ path: 'file', message: 'a multipart file part named "file" is required', code: 'invalid_input' }],
    });
  }
  // readers choose the format by extension; the spooled file has none
  const ext = path
    .extname(file.originalname)
    .toLowerCase()
    .replace(/[^.a-z0-9]/g, '');
  const spooled = `${file.path}${ext}`;
  fs.renameSync(file.path, spooled);
  return { path: spooled, originalName: file.originalname, release: () => fs.rmSync(spooled, { force: true }) };
}

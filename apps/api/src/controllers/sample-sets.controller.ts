import { Body, Controller, Get, Inject, Param, Post, Query, UploadedFile, UseInterceptors } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiTags } from '@nestjs/swagger';
import {
  SampleSetService,
  importSampleSetSchema,
  registerSampleSetSchema,
  type RegisterSampleSet,
  sampleSetListQuerySchema,
  type SampleSetListQuery,
  type ImportSampleSet,
} from '@abacus/catalog';
import { ZodValidationPipe, uuidParam, type RequestScope } from '@abacus/core';
import { Access } from '../common/access.decorator';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';
import { requireUpload, UploadCleanupInterceptor } from './upload';

@ApiTags('sample sets')
@ApiBearerAuth('api-key')
@Controller('sample-sets')
@Access('viewer')
export class SampleSetsController {
  constructor(@Inject(SampleSetService) private readonly sampleSets: SampleSetService) {}

  @Post()
  @Access('engineer')
  @ApiConsumes('multipart/form-data')
  @ApiBody({
    schema: {
      type: 'object',
      required: ['file', 'name', 'businessLine', 'label'],
      properties: { file: { type: 'string', format: 'binary' }, ...(openApiSchema(importSampleSetSchema).properties as object) },
    },
  })
  @UseInterceptors(FileInterceptor('file'), UploadCleanupInterceptor)
  async import(
    @UploadedFile() file: Express.Multer.File | undefined,
    @Body(new ZodValidationPipe(importSampleSetSchema)) body: ImportSampleSet,
    @Scope() scope: RequestScope,
  ) {
    const upload = requireUpload(file);
    try {
      return await this.sampleSets.import(upload, body, scope);
    } finally {
      upload.release();
    }
  }

  /** A sample set kept in a store, registered without copying (JSON body; see registerSampleSetSchema). */
  @Post('register')
  @Access('engineer')
  register(@Body(new ZodValidationPipe(registerSampleSetSchema)) body: RegisterSampleSet, @Scope() scope: RequestScope) {
    return this.sampleSets.register(body, scope);
  }

  @Get()
  list(@Query(new ZodValidationPipe(sampleSetListQuerySchema)) q: SampleSetListQuery, @Scope() scope: RequestScope) {
    return this.sampleSets.list(scope, q);
  }

  @Get(':id')
  get(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.sampleSets.get(id, scope);
  }
}

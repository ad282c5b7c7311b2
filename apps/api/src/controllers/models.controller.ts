import fs from 'node:fs';
import { Body, Controller, Get, Inject, Param, Post, Query, StreamableFile } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  DataDir,
  ModelService,
  createModelSchema,
  lineListQuerySchema,
  type LineListQuery,
  type CreateModel,
} from '@abacus/catalog';
import { ZodValidationPipe, uuidParam, type RequestScope } from '@abacus/core';
import { Access } from '../common/access.decorator';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';
import { modelExportFile, modelExportQuerySchema, type ModelExportQuery } from './model-export';

@ApiTags('models')
@ApiBearerAuth('api-key')
@Controller('models')
@Access('viewer')
export class ModelsController {
  constructor(
    @Inject(ModelService) private readonly models: ModelService,
    @Inject(DataDir) private readonly dataDir: DataDir,
  ) {}

  @Post()
  @Access('engineer')
  @ApiBody({ schema: openApiSchema(createModelSchema) })
  create(@Body(new ZodValidationPipe(createModelSchema)) body: CreateModel, @Scope() scope: RequestScope) {
    return this.models.create(body, scope);
  }

  @Get()
  list(@Query(new ZodValidationPipe(lineListQuerySchema)) q: LineListQuery, @Scope() scope: RequestScope) {
    return this.models.list(scope, q);
  }

  @Get(':id')
  get(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.models.get(id, scope);
  }

  @Get(':id/export')
  @ApiOperation({
    summary:
      "the version's checkpoint as safetensors (model.safetensors) or as an ONNX graph (inputs numeric [batch, N], one int64 [batch, L] per slot padded with -1; outputs probability, logit)",
  })
  async export(
    @Param('id', uuidParam('id')) id: string,
    @Query(new ZodValidationPipe(modelExportQuerySchema)) q: ModelExportQuery,
    @Scope() scope: RequestScope,
  ): Promise<StreamableFile> {
    const model = await this.models.get(id, scope);
    const f = await modelExportFile(this.dataDir, model, q.format);
    const stream = fs.createReadStream(f.file);
    if (f.cleanup) stream.on('close', () => fs.rm(f.file, { force: true }, () => undefined));
    return new StreamableFile(stream, {
      type: q.format === 'onnx' ? 'application/x-onnx' : 'application/octet-stream',
      disposition: `attachment; filename="${f.filename}"`,
      length: f.bytes,
    });
  }
}

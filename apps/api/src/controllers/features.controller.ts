import {
  Body,
  Controller,
  Get,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Query,
  UploadedFile,
  UseInterceptors,
} from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import {
  FeatureService,
  createFeatureSchema,
  featureListQuerySchema,
  importFeatureTableSchema,
  lineName,
  updateFeatureSchema,
  type CreateFeature,
  type UpdateFeature,
  type FeatureListQuery,
  type ImportFeatureTable,
} from '@abacus/catalog';
import { ZodValidationPipe, paginationSchema, uuidParam, type Pagination, type RequestScope } from '@abacus/core';
import {
  CostLedgerService,
  FeatureProvenanceService,
  costLedgerQuerySchema,
  measureCostsSchema,
  type CostLedgerQuery,
  type MeasureCosts,
} from '@abacus/workflows';
import { Access } from '../common/access.decorator';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';
import { requireUpload, UploadCleanupInterceptor } from './upload';

@ApiTags('features')
@ApiBearerAuth('api-key')
@Controller()
@Access('viewer')
export class FeaturesController {
  constructor(
    @Inject(FeatureService) private readonly features: FeatureService,
    @Inject(CostLedgerService) private readonly costs: CostLedgerService,
    @Inject(FeatureProvenanceService) private readonly provenance: FeatureProvenanceService,
  ) {}

  @Post('features')
  @Access('engineer')
  @ApiBody({ schema: openApiSchema(createFeatureSchema) })
  create(@Body(new ZodValidationPipe(createFeatureSchema)) body: CreateFeature, @Scope() scope: RequestScope) {
    return this.features.create(body, scope);
  }

  @Get('features')
  list(@Query(new ZodValidationPipe(featureListQuerySchema)) q: FeatureListQuery, @Scope() scope: RequestScope) {
    return this.features.list(scope, q);
  }

  // before features/:id, which would take "costs" for an id
  @Get('features/costs')
  ledger(@Query(new ZodValidationPipe(costLedgerQuerySchema)) q: CostLedgerQuery, @Scope() scope: RequestScope) {
    return this.costs.ledger(scope, q);
  }

  @Post('features/costs/measure')
  @Access('engineer')
  @HttpCode(200)
  @ApiBody({ schema: openApiSchema(measureCostsSchema) })
  measure(@Body(new ZodValidationPipe(measureCostsSchema)) body: MeasureCosts, @Scope() scope: RequestScope) {
    return this.costs.measure(scope, body);
  }

  @Get('features/:id')
  get(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.features.get(id, scope);
  }

  /** Provenance: the experiments of the feature's line that measured it, each with its verdict on it. */
  @Get('features/:id/experiments')
  experiments(
    @Param('id', uuidParam('id')) id: string,
    @Query(new ZodValidationPipe(paginationSchema.strict())) q: Pagination,
    @Scope() scope: RequestScope,
  ) {
    return this.provenance.experiments(id, scope, q);
  }

  @Patch('features/:id')
  @Access('engineer')
  @ApiBody({ schema: openApiSchema(updateFeatureSchema) })
  update(
    @Param('id', uuidParam('id')) id: string,
    @Body(new ZodValidationPipe(updateFeatureSchema)) body: UpdateFeature,
    @Scope() scope: RequestScope,
  ) {
    return this.features.update(id, body, scope);
  }

  @Post('feature-tables')
  @Access('engineer')
  @ApiConsumes('multipart/form-data')
  @ApiBody({
    schema: {
      type: 'object',
      required: ['file', 'name', 'businessLine', 'entityKey'],
      properties: {
        file: { type: 'string', format: 'binary' },
        ...(openApiSchema(importFeatureTableSchema).properties as object),
      },
    },
  })
  @UseInterceptors(FileInterceptor('file'), UploadCleanupInterceptor)
  async importTable(
    @UploadedFile() file: Express.Multer.File | undefined,
    @Body(new ZodValidationPipe(importFeatureTableSchema)) body: ImportFeatureTable,
    @Scope() scope: RequestScope,
  ) {
    const upload = requireUpload(file);
    try {
      return await this.features.importTable(upload, body, scope);
    } finally {
      upload.release();
    }
  }

  @Get('feature-tables')
  listTables(
    @Query(new ZodValidationPipe(z.object({ businessLine: lineName.optional() }).strict())) q: { businessLine?: string },
    @Scope() scope: RequestScope,
  ) {
    return this.features.listTables(scope, q.businessLine);
  }
}

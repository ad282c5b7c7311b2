import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { ZodValidationPipe, uuidParam, type RequestScope } from '@abacus/core';
import {
  ExperimentService,
  createExperimentSchema,
  experimentListQuerySchema,
  type CreateExperiment,
  type ExperimentListQuery,
} from '@abacus/workflows';
import { Access } from '../common/access.decorator';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';

@ApiTags('experiments')
@ApiBearerAuth('api-key')
@Controller('experiments')
@Access('viewer')
export class ExperimentsController {
  constructor(@Inject(ExperimentService) private readonly experiments: ExperimentService) {}

  @Post()
  @Access('engineer')
  @ApiOperation({ summary: 'Validate a spec, write the experiment and its trials, enqueue its flow' })
  @ApiBody({ schema: openApiSchema(createExperimentSchema) })
  create(@Body(new ZodValidationPipe(createExperimentSchema)) body: CreateExperiment, @Scope() scope: RequestScope) {
    return this.experiments.create(body, scope);
  }

  @Get()
  list(@Query(new ZodValidationPipe(experimentListQuerySchema)) q: ExperimentListQuery, @Scope() scope: RequestScope) {
    return this.experiments.list(scope, q);
  }

  @Get(':id')
  @ApiOperation({ summary: 'The experiment with its trials, progress and result' })
  get(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.experiments.get(id, scope);
  }

  @Get(':id/results')
  @ApiOperation({ summary: 'Per-feature results (scorer: iv, psi, ...)' })
  results(
    @Param('id', uuidParam('id')) id: string,
    @Query(new ZodValidationPipe(z.object({ scorer: z.string().min(1).max(100).optional() }).strict())) q: { scorer?: string },
    @Scope() scope: RequestScope,
  ) {
    return this.experiments.results(id, scope, q.scorer);
  }

  @Post(':id/cancel')
  @Access('engineer')
  @HttpCode(200)
  cancel(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.experiments.cancel(id, scope);
  }
}

import { Body, Controller, Get, Inject, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import { ModelService, createModelSchema, lineListQuerySchema, type LineListQuery, type CreateModel } from '@abacus/catalog';
import { ZodValidationPipe, uuidParam, type RequestScope } from '@abacus/core';
import { Access } from '../common/access.decorator';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';

@ApiTags('models')
@ApiBearerAuth('api-key')
@Controller('models')
@Access('viewer')
export class ModelsController {
  constructor(@Inject(ModelService) private readonly models: ModelService) {}

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
}

import { Body, Controller, Get, Inject, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiBody, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { ModelService, createModelSchema, lineName, type CreateModel } from '@abacus/catalog';
import { ZodValidationPipe, type RequestScope } from '@abacus/core';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';

const listQuery = z.object({
  businessLine: lineName.optional(),
  page: z.coerce.number().int().min(1).default(1),
  pageSize: z.coerce.number().int().min(1).max(500).default(50),
});

@ApiTags('models')
@Controller('models')
export class ModelsController {
  constructor(@Inject(ModelService) private readonly models: ModelService) {}

  @Post()
  @ApiBody({ schema: openApiSchema(createModelSchema) })
  create(@Body(new ZodValidationPipe(createModelSchema)) body: CreateModel, @Scope() scope: RequestScope) {
    return this.models.create(body, scope);
  }

  @Get()
  list(@Query(new ZodValidationPipe(listQuery)) q: z.output<typeof listQuery>, @Scope() scope: RequestScope) {
    return this.models.list(scope, q);
  }

  @Get(':id')
  get(@Param('id', ParseUUIDPipe) id: string, @Scope() scope: RequestScope) {
    return this.models.get(id, scope);
  }
}

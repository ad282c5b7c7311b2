import { Body, Controller, Get, Inject, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import { BusinessLineService, createBusinessLineSchema, lineName, type CreateBusinessLine } from '@abacus/catalog';
import { ZodValidationPipe, type RequestScope } from '@abacus/core';
import { Access } from '../common/access.decorator';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';

@ApiTags('business lines')
@ApiBearerAuth('api-key')
@Controller('business-lines')
@Access('viewer')
export class BusinessLinesController {
  constructor(@Inject(BusinessLineService) private readonly lines: BusinessLineService) {}

  @Post()
  @Access('admin')
  @ApiBody({ schema: openApiSchema(createBusinessLineSchema) })
  create(@Body(new ZodValidationPipe(createBusinessLineSchema)) body: CreateBusinessLine, @Scope() scope: RequestScope) {
    return this.lines.create(body, scope);
  }

  @Get()
  list(@Scope() scope: RequestScope) {
    return this.lines.list(scope);
  }

  @Get(':name')
  get(@Param('name', new ZodValidationPipe(lineName, { field: 'name' })) name: string, @Scope() scope: RequestScope) {
    return this.lines.get(name, scope);
  }
}

import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { ZodValidationPipe, lineName, uuidParam, type RequestScope } from '@abacus/core';
import {
  ServingService,
  pinSchema,
  registerServingSchema,
  servingSignalSchema,
  type PinInput,
  type RegisterServing,
  type ServingSignalInput,
} from '@abacus/serving';
import { Access } from '../common/access.decorator';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';

const listQuery = z.object({ businessLine: lineName.optional() }).strict();

/** Served models in tiers (divide's tiers), their switching policy, signals, pins and switch log. */
@ApiTags('serving')
@ApiBearerAuth('api-key')
@Controller('serving')
@Access('viewer')
export class ServingController {
  constructor(@Inject(ServingService) private readonly serving: ServingService) {}

  @Post()
  @Access('engineer')
  @ApiBody({ schema: openApiSchema(registerServingSchema) })
  register(@Body(new ZodValidationPipe(registerServingSchema)) body: RegisterServing, @Scope() scope: RequestScope) {
    return this.serving.register(body, scope);
  }

  @Get()
  list(@Query(new ZodValidationPipe(listQuery)) q: z.output<typeof listQuery>, @Scope() scope: RequestScope) {
    return this.serving.list(scope, q);
  }

  @Get(':id')
  get(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.serving.get(id, scope);
  }

  @Get(':id/active')
  active(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.serving.active(id, scope);
  }

  @Get(':id/log')
  log(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.serving.log(id, scope);
  }

  @Post(':id/signals')
  @Access('engineer')
  @HttpCode(200)
  @ApiBody({ schema: openApiSchema(servingSignalSchema) })
  signal(
    @Param('id', uuidParam('id')) id: string,
    @Body(new ZodValidationPipe(servingSignalSchema)) body: ServingSignalInput,
    @Scope() scope: RequestScope,
  ) {
    return this.serving.signal(id, body, scope);
  }

  @Post(':id/pin')
  @Access('engineer')
  @HttpCode(200)
  @ApiBody({ schema: openApiSchema(pinSchema) })
  pin(
    @Param('id', uuidParam('id')) id: string,
    @Body(new ZodValidationPipe(pinSchema)) body: PinInput,
    @Scope() scope: RequestScope,
  ) {
    return this.serving.pin(id, body, scope);
  }

  @Delete(':id/pin')
  @Access('engineer')
  unpin(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.serving.unpin(id, scope);
  }
}

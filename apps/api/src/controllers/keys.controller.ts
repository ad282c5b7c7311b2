import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyService, createKeySchema, type CreateKey } from '@abacus/access';
import { ZodValidationPipe, uuidParam, type RequestScope } from '@abacus/core';
import { Access } from '../common/access.decorator';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';

@ApiTags('keys')
@ApiBearerAuth('api-key')
@Controller('keys')
@Access('admin')
export class KeysController {
  constructor(@Inject(ApiKeyService) private readonly keys: ApiKeyService) {}

  @Post()
  @ApiOperation({ summary: 'Create an API key; the secret is in this answer only (the database keeps its SHA-256)' })
  @ApiBody({ schema: openApiSchema(createKeySchema) })
  async create(@Body(new ZodValidationPipe(createKeySchema)) body: CreateKey, @Scope() scope: RequestScope) {
    const { key, secret } = await this.keys.create(body, scope);
    return { ...key, secret };
  }

  @Get()
  @ApiOperation({ summary: 'Every key with its prefix, role, lines, expiry and revocation (never secrets or hashes)' })
  list(@Scope() scope: RequestScope) {
    return this.keys.list(scope);
  }

  @Get('me')
  @Access('viewer')
  @ApiOperation({ summary: 'The key this request was made with: name, role, lines, expiry' })
  me(@Scope() scope: RequestScope) {
    return this.keys.get(scope.keyId!);
  }

  @Post(':id/revoke')
  @HttpCode(200)
  @ApiOperation({ summary: 'Revoke a key: it answers 401 from now on' })
  revoke(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.keys.revoke(id, scope);
  }
}

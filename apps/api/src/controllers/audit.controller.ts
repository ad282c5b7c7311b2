import { Controller, Get, Inject, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuditService, auditQuerySchema, type AuditQuery } from '@abacus/access';
import { ZodValidationPipe, type RequestScope } from '@abacus/core';
import { Scope } from '../common/scope.decorator';
import { Access } from '../common/access.decorator';

@ApiTags('audit')
@ApiBearerAuth('api-key')
@Controller('audit')
@Access('admin')
export class AuditController {
  constructor(@Inject(AuditService) private readonly audit: AuditService) {}

  @Get()
  @ApiOperation({
    summary: 'Who did what, newest first: ?action=&businessLine=&actor=(key name or id)&since=(ISO time)&page=&pageSize=',
  })
  list(@Query(new ZodValidationPipe(auditQuerySchema)) q: AuditQuery, @Scope() scope: RequestScope) {
    return this.audit.list(q, scope);
  }
}

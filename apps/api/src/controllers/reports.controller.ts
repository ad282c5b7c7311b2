import { Body, Controller, Get, Header, Inject, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ZodValidationPipe, uuidParam, type RequestScope } from '@abacus/core';
import { ReportService, reportListQuerySchema, runReportSchema, type ReportListQuery, type RunReport } from '@abacus/reports';
import { Access } from '../common/access.decorator';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';

/** Auto-pruning reports: list, show, the rendered HTML, run one now. */
@ApiTags('reports')
@ApiBearerAuth('api-key')
@Controller('reports')
@Access('viewer')
export class ReportsController {
  constructor(@Inject(ReportService) private readonly reports: ReportService) {}

  @Post('run')
  @Access('engineer')
  @ApiOperation({
    summary: "a report of the model now: a subtract in report mode on the model's latest data, rendered and delivered",
  })
  @ApiBody({ schema: openApiSchema(runReportSchema) })
  run(@Body(new ZodValidationPipe(runReportSchema)) body: RunReport, @Scope() scope: RequestScope) {
    return this.reports.runNow(body, scope);
  }

  @Get()
  list(@Query(new ZodValidationPipe(reportListQuerySchema)) q: ReportListQuery, @Scope() scope: RequestScope) {
    return this.reports.list(scope, q);
  }

  @Get(':id')
  get(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.reports.get(id, scope);
  }

  @Get(':id/html')
  @Header('content-type', 'text/html; charset=utf-8')
  // the report is a document of its own: no scripts, its one stylesheet inline
  @Header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'")
  html(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.reports.html(id, scope);
  }
}

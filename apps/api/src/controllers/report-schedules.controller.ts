import { Body, Controller, Delete, Get, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import { ZodValidationPipe, uuidParam, type RequestScope } from '@abacus/core';
import {
  ReportScheduleService,
  createScheduleSchema,
  scheduleListQuerySchema,
  updateScheduleSchema,
  type CreateSchedule,
  type ScheduleListQuery,
  type UpdateSchedule,
} from '@abacus/reports';
import { Access } from '../common/access.decorator';
import { openApiSchema } from '../common/openapi';
import { Scope } from '../common/scope.decorator';

/** The report schedule of a model (cron in a time zone), held by BullMQ's job scheduler. */
@ApiTags('reports')
@ApiBearerAuth('api-key')
@Controller('report-schedules')
@Access('viewer')
export class ReportSchedulesController {
  constructor(@Inject(ReportScheduleService) private readonly schedules: ReportScheduleService) {}

  @Post()
  @Access('engineer')
  @ApiBody({ schema: openApiSchema(createScheduleSchema) })
  create(@Body(new ZodValidationPipe(createScheduleSchema)) body: CreateSchedule, @Scope() scope: RequestScope) {
    return this.schedules.create(body, scope);
  }

  @Get()
  list(@Query(new ZodValidationPipe(scheduleListQuerySchema)) q: ScheduleListQuery, @Scope() scope: RequestScope) {
    return this.schedules.list(scope, q);
  }

  @Get(':id')
  get(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.schedules.get(id, scope);
  }

  @Patch(':id')
  @Access('engineer')
  @ApiBody({ schema: openApiSchema(updateScheduleSchema) })
  update(
    @Param('id', uuidParam('id')) id: string,
    @Body(new ZodValidationPipe(updateScheduleSchema)) body: UpdateSchedule,
    @Scope() scope: RequestScope,
  ) {
    return this.schedules.update(id, body, scope);
  }

  @Delete(':id')
  @Access('engineer')
  remove(@Param('id', uuidParam('id')) id: string, @Scope() scope: RequestScope) {
    return this.schedules.remove(id, scope);
  }
}

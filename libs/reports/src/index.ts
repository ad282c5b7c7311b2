export * from './report.schemas';
export {
  profileColumn,
  countOnProfile,
  profileCounts,
  PROFILE_BINS,
  PROFILE_TOP_VALUES,
  type FeatureProfile,
} from './feature-profile';
export {
  diffReports,
  type ReportChanges,
  type ReportThresholds,
  type PreviousSnapshot,
  type CurrentSnapshot,
} from './report-diff';
export {
  summarize,
  type ReportContent,
  type ReportSummary,
  type ReportFeature,
  type ResourceSaving,
  type CurvePoint,
} from './report-content';
export { renderReportHtml, renderReportText, pruningCurveSvg } from './report-html';
export { latestSampleSet } from './latest-data';
export { latestModel } from './model-ref';
export { ReportScheduleService, type ScheduleDefaults } from './report-schedule.service';
export { ReportService } from './report.service';
export { ReportFireHandler, fireTimeOf } from './report-fire.handler';
export { ReportRunHandler, REPORT_EVENT, reportLink, type ReportRunOptions } from './report-run.handler';
export { ReportDeliveryHandler, type ReportDeliveryOptions } from './report-delivery.handler';
export { ReportSweeper } from './report-sweeper';
export { Mailer, type MailMessage } from './mailer';

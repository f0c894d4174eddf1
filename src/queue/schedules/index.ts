/**
 * Schedules (docs/queue.md, "Schedules"): cron and interval specs, the tick plan, the stored
 * schedules and the `Scheduler` loop that fires each tick exactly once. The rest of src/ imports
 * this folder through this file only.
 */
export { compileCron, tzOffsetMs, wallToInstant } from './cron.js';
export type { NextTick } from './cron.js';
export { checkProcessorSchedules, splitProcessorSchedule } from './schedule-plan.js';
export { ScheduleService } from './schedule-service.js';
export type { MissedPolicy, ProcessorSchedule, ScheduleInfo, ScheduleOptions, ScheduleSpec, TickRecord } from './schedule-types.js';
export { Scheduler } from './scheduler.js';
export type { SchedulerOptions } from './scheduler.js';

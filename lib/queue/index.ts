export * from './in-process-job.dispatcher';

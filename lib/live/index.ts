export { LiveEventsMiddleware, toLiveEvent } from './live-events.middleware';
export { runEventsSse, type RunEventMessage, type RunWatcher } from './run-events.sse';

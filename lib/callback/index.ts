export { ReactorCallbackModule } from './reactor-callback.module';
export type { ReactorCallbackOptions } from './callback.options';
export type { CallbackAnswer } from './callback.controller';
export { CallbackTokens } from './callback-tokens';
export type { CallbackTokenClaim, CallbackTokenCheck } from './callback-tokens';

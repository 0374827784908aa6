import { Controller, Module, type DynamicModule } from '@nestjs/common';
import { REACTOR_CALLBACK_ISSUER } from '../nest/reactor.client';
import { CallbackController } from './callback.controller';
import { CallbackIssuer } from './callback-issuer';
import { CALLBACK_OPTIONS, resolveCallbackOptions, type ReactorCallbackOptions } from './callback.options';
import { CallbackTokens } from './callback-tokens';

/**
 * Callback tokens: an interrupt declared `r.interrupt(name, { token: { expiresInMs } })` hands out,
 * at each pause, a signed single-use token (on `waitingFor[].callback` of the paused outcome, and
 * from `client.callbackToken(runId, step)`) and, with `baseUrl`, the URL a webhook POSTs its payload
 * to: `POST /<path>/<token>`. Needs `ReactorModule` (global by default; otherwise pass it in
 * `imports`). The module is global: the client finds the token signer through it.
 *
 * ```ts
 * @Module({
 *   imports: [
 *     ReactorModule.forRoot({ redis: { url } }),
 *     ReactorCallbackModule.forRoot({ secret: process.env.CALLBACK_SECRET!, baseUrl: 'https://api.example.com' }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 *
 * Refuses to boot (a `ConfigurationError` naming the option) without a `secret` of 32 characters or more.
 */
@Module({})
export class ReactorCallbackModule {
  /** Mount the callback route at `options.path` (default `reactor/callbacks`), signing with `options.secret`. */
  static forRoot(options: ReactorCallbackOptions): DynamicModule {
    const resolved = resolveCallbackOptions(options);
    const tokens = new CallbackTokens(resolved.secrets);
    // A controller class of its own per mount: its path is this call's.
    class MountedCallbackController extends CallbackController {}
    Controller(resolved.path)(MountedCallbackController);
    return {
      module: ReactorCallbackModule,
      global: true,
      imports: resolved.imports,
      controllers: [MountedCallbackController],
      providers: [
        { provide: CALLBACK_OPTIONS, useValue: resolved },
        { provide: CallbackTokens, useValue: tokens },
        { provide: REACTOR_CALLBACK_ISSUER, useValue: new CallbackIssuer(tokens, resolved.urlPrefix) },
      ],
      exports: [REACTOR_CALLBACK_ISSUER],
    };
  }
}

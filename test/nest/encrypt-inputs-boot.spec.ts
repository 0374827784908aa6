import { Test } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { ReactorModuleOptions } from '../../lib/config/reactor-module-options.interface';
import { success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { SECRET, testCipher } from '../conformance/test-cipher';
import { CapturingLogger } from './fixtures';

@Reactor('boot-encrypted', { encryptInputs: true })
class EncryptedReactor implements ReactorBlueprint<{ card: string }> {
  build(r: ReactorBuilder<{ card: string }>) {
    return r.step('len', ({ card }: { card: string }) => success(card.length), {
      card: r.input('card', { type: 'string', redact: true }),
    });
  }
}

async function boot(options: ReactorModuleOptions) {
  const app = await Test.createTestingModule({
    imports: [ReactorModule.forRoot(options)],
    providers: [EncryptedReactor],
  })
    .setLogger(new CapturingLogger())
    .compile();
  return app;
}

describe('ReactorModule with encryptInputs', () => {
  it('refuses to boot without an inputCipher, naming the reactor and the option', async () => {
    const app = await boot({});
    try {
      await expect(app.init()).rejects.toMatchObject({
        name: 'ConfigurationError',
        option: 'inputCipher',
        message: expect.stringContaining("Reactor 'boot-encrypted' declares encryptInputs"),
      });
    } finally {
      await app.close().catch(() => undefined);
    }
  });

  it('boots with one and runs the reactor', async () => {
    const app = await boot({ inputCipher: testCipher });
    await app.init();
    try {
      const outcome = await app.get(ReactorClient).run(EncryptedReactor, { card: SECRET });
      expect(outcome).toMatchObject({ status: 'completed', value: SECRET.length });
    } finally {
      await app.close();
    }
  });

  it('refuses an inputCipher that is not one, with the shape it must have', async () => {
    await expect(boot({ inputCipher: { encrypt: (s: string) => s } as never })).rejects.toThrow(
      /inputCipher.*an InputCipher \(an object with encrypt\(plaintext, context\) and decrypt\(ciphertext, context\)\)/,
    );
  });
});

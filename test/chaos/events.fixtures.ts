/** The reactor of the events chaos test (`events-emit.spec.ts`, `events-emitter.ts`): started by event `chaos.order.paid`. */
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';

@Reactor('chaos-evt-fulfil', {
  on: { event: 'chaos.order.paid', input: (p: { orderId: string }) => ({ orderId: p.orderId }) },
})
export class ChaosFulfilReactor implements ReactorBlueprint<{ orderId: string }> {
  build(r: ReactorBuilder<{ orderId: string }>) {
    const orderId = r.input('orderId', { type: 'string' });
    return r.step('ship', ({ orderId: id }: { orderId: string }) => success(id), { orderId });
  }
}

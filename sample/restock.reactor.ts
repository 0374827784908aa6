import { Injectable } from '@nestjs/common';
import { IsInt, IsString, Min } from 'class-validator';
import { Reactor, Step, failure, success, type ReactorBlueprint, type ReactorBuilder, type StepHandler } from '../lib';
import { InventoryService } from './inventory.service';

/** One line of a supplier's restock file. */
export class RestockLine {
  @IsString() sku!: string;
  @IsInt() @Min(1) quantity!: number;
}

/** Input of the restock import. */
export interface RestockInput {
  lines: RestockLine[];
}

/** Add stock for one line; undone by taking it back out. Unknown SKUs fail. */
@Step('add-stock')
export class AddStock implements StepHandler<RestockLine, RestockLine> {
  constructor(private readonly inventory: InventoryService) {}

  async run(line: RestockLine) {
    if (!this.inventory.knows(line.sku)) return failure(new Error(`unknown sku '${line.sku}'`), { retryable: false });
    this.inventory.add(line.sku, line.quantity);
    return success(line);
  }

  async undo(line: RestockLine) {
    this.inventory.add(line.sku, -line.quantity);
  }
}

/** The element reactor: one restock line. */
@Reactor('restock-line')
export class RestockLineReactor implements ReactorBlueprint<RestockLine> {
  build(r: ReactorBuilder<RestockLine>) {
    return r.step('add', AddStock, {
      sku: r.input('sku', { type: 'string' }),
      quantity: r.input('quantity', { type: 'integer' }),
    });
  }
}

/**
 * Import a restock file: a fan-out map of {@link RestockLineReactor} over its lines, at most 2 in
 * flight, atomic (one bad line rolls every added line back, highest index first).
 */
@Reactor('restock-import')
@Injectable()
export class RestockImportReactor implements ReactorBlueprint<RestockInput> {
  build(r: ReactorBuilder<RestockInput>) {
    return r.map('lines', {
      source: r.input('lines', { type: 'array' }),
      element: RestockLineReactor,
      inputs: (line) => ({ sku: line.path('sku'), quantity: line.path('quantity') }),
      fanOut: { batchSize: 2 },
      collect: async (results) => (await results.values()).reduce((units, line) => units + line.quantity, 0),
    });
  }
}

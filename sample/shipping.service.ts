import { Injectable, Logger } from '@nestjs/common';
import { latency } from './latency';
import type { AddressDto } from './order.dto';

/** A booked shipment. */
export interface Shipment {
  shipmentId: string;
  trackingNumber: string;
  country: string;
}

/** Raised when the carrier does not deliver to a country. Retrying cannot help. */
export class UnsupportedCountryError extends Error {
  readonly retryable = false;
  constructor(readonly country: string) {
    super(`we do not ship to '${country}'`);
    this.name = 'UnsupportedCountryError';
  }
}

/** An in-memory carrier that delivers to a few countries. */
@Injectable()
export class ShippingService {
  static readonly SUPPORTED_COUNTRIES = ['FR', 'DE', 'NL', 'BE'];
  private readonly logger = new Logger('Shipping');
  private readonly shipments = new Map<string, Shipment>();
  private readonly labels = new Set<string>();
  private nextId = 1;

  async createShipment(orderId: string, address: AddressDto): Promise<Shipment> {
    // A label is printed first; booking the carrier can still fail after that.
    this.labels.add(orderId);
    this.logger.log(`printed label for ${orderId}`);
    await latency(5);
    if (!ShippingService.SUPPORTED_COUNTRIES.includes(address.country))
      throw new UnsupportedCountryError(address.country);
    const shipment = {
      shipmentId: `sh_${this.nextId++}`,
      trackingNumber: `TRK${1000 + this.nextId}`,
      country: address.country,
    };
    this.shipments.set(shipment.shipmentId, shipment);
    this.logger.log(`booked ${shipment.shipmentId} to ${address.city}, ${address.country}`);
    return shipment;
  }

  /** Throw away a label printed for an order whose shipment was never booked. Idempotent. */
  async voidLabel(orderId: string): Promise<void> {
    if (this.labels.delete(orderId)) this.logger.warn(`voided the label of ${orderId}`);
  }

  /** Cancel a booked shipment. Idempotent. */
  async cancelShipment(shipmentId: string): Promise<void> {
    if (this.shipments.delete(shipmentId)) this.logger.warn(`cancelled ${shipmentId}`);
  }
}

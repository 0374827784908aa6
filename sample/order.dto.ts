import { Type } from 'class-transformer';
import {
  ArrayNotEmpty,
  IsArray,
  IsInt,
  IsNotEmpty,
  IsPositive,
  IsString,
  Length,
  Min,
  ValidateNested,
} from 'class-validator';

/** One line of an order. */
export class OrderLineDto {
  @IsString()
  @IsNotEmpty()
  sku!: string;

  @IsInt()
  @Min(1)
  quantity!: number;
}

/** Where the parcel goes. */
export class AddressDto {
  @IsString()
  @IsNotEmpty()
  name!: string;

  @IsString()
  @IsNotEmpty()
  city!: string;

  /** ISO 3166-1 alpha-2 country code. */
  @IsString()
  @Length(2, 2)
  country!: string;
}

/** The checkout reactor's `order` input, validated before any step runs. */
export class OrderDto {
  @IsString()
  @IsNotEmpty()
  orderId!: string;

  @IsString()
  @IsNotEmpty()
  customerId!: string;

  @IsArray()
  @ArrayNotEmpty()
  @ValidateNested({ each: true })
  @Type(() => OrderLineDto)
  items!: OrderLineDto[];

  /** Total in cents. */
  @IsInt()
  @IsPositive()
  totalCents!: number;

  @ValidateNested()
  @Type(() => AddressDto)
  shippingAddress!: AddressDto;
}

import { getMetadataStorage } from 'class-validator';
import type { DtoClass } from '../definition/step';

/** A property declared by a class-validator DTO. */
export interface ContractProperty {
  name: string;
  optional: boolean;
}

/**
 * The properties a DTO declares through class-validator decorators, and whether each is optional
 * (`@IsOptional`). Used at definition time to check that every required step input is wired.
 */
export function contractProperties(dto: DtoClass): ContractProperty[] {
  const metadatas = getMetadataStorage().getTargetValidationMetadatas(dto, '', true, false);
  const props = new Map<string, ContractProperty>();
  for (const m of metadatas) {
    const existing = props.get(m.propertyName) ?? { name: m.propertyName, optional: false };
    if (m.type === 'conditionalValidation') existing.optional = true;
    props.set(m.propertyName, existing);
  }
  return [...props.values()];
}

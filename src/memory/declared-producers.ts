/** A named producer as one simulated connection declares it on one stream. */
export interface ProducerDeclaration {
  /** The simulated connection it is declared over (see `MemoryBroker.target`). */
  readonly connection: string;
  readonly stream: string;
  readonly producer: string;
}

/**
 * The named producers declared on the embedded broker, as RabbitMQ keeps them per connection:
 * a second producer of one name on one stream over one connection is refused while the first
 * is declared (precondition failed, code 17), over another connection it is not (checked
 * against RabbitMQ 4.0.5). So a job built again in the same process whose first target was
 * never released fails here as it would there.
 */
export class DeclaredProducers {
  private readonly holders = new Map<string, object>();

  /** Declares `holder`'s producer; false when another holder has it declared. */
  declare(declaration: ProducerDeclaration, holder: object): boolean {
    const key = keyOf(declaration);
    const current = this.holders.get(key);
    if (current !== undefined && current !== holder) return false;
    this.holders.set(key, holder);
    return true;
  }

  /** Removes `holder`'s declaration, if it has one. */
  release(declaration: ProducerDeclaration, holder: object): void {
    const key = keyOf(declaration);
    if (this.holders.get(key) === holder) this.holders.delete(key);
  }
}

function keyOf({ connection, stream, producer }: ProducerDeclaration): string {
  return JSON.stringify([connection, stream, producer]);
}

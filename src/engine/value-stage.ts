/**
 * A job's `.filter()` or `.map()`, applied in builder order to each decoded value before
 * event time, key and window. Stored untyped: the builder's types carry what each one sees.
 */
export interface ValueStage {
  readonly kind: 'filter' | 'map';
  readonly fn: (value: unknown) => unknown;
}

import { ConfigError, SchemaValidationError } from '../common/errors.js';

// The Standard Schema interface, version 1 (https://standardschema.dev), vendored: zod,
// valibot, arktype and others implement it, so a job can validate with any of them without
// this library depending on one. Only the parts a validator must provide are copied.

/** A validator of the Standard Schema interface: `schema['~standard'].validate(value)`. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The validator's version, vendor and `validate` function, under the spec's reserved key. */
  readonly '~standard': StandardSchemaV1.Props<Input, Output>;
}

// eslint-disable-next-line @typescript-eslint/no-namespace -- the interface's own shape
export declare namespace StandardSchemaV1 {
  export interface Props<Input = unknown, Output = Input> {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    readonly types?: Types<Input, Output> | undefined;
  }

  export type Result<Output> = SuccessResult<Output> | FailureResult;

  export interface SuccessResult<Output> {
    readonly value: Output;
    readonly issues?: undefined;
  }

  export interface FailureResult {
    readonly issues: readonly Issue[];
  }

  export interface Issue {
    readonly message: string;
    readonly path?: readonly (PropertyKey | PathSegment)[] | undefined;
  }

  export interface PathSegment {
    readonly key: PropertyKey;
  }

  export interface Types<Input = unknown, Output = Input> {
    readonly input: Input;
    readonly output: Output;
  }

  export type InferOutput<Schema extends StandardSchemaV1> = NonNullable<
    Schema['~standard']['types']
  >['output'];
}

/**
 * `schema` as a synchronous check of decoded values: returns the schema's output (which may
 * differ from its input: defaults, transforms) or throws a SchemaValidationError listing the
 * issues with their paths. The hot path is synchronous, so a validator that answers with a
 * Promise is refused with a ConfigError, which stops the job whatever its error policy.
 */
export function synchronousValidator<Output>(
  schema: StandardSchemaV1<unknown, Output>,
): (value: unknown) => Output {
  const standard = (schema as Partial<StandardSchemaV1> | null | undefined)?.['~standard'];
  if (standard?.version !== 1 || typeof standard.validate !== 'function') {
    throw new ConfigError(
      'decode schema',
      "must implement Standard Schema version 1 (a '~standard' property with version 1 and validate)",
      schema,
    );
  }
  const { validate } = schema['~standard'];
  return (value) => {
    const result = validate(value);
    if (result instanceof Promise) {
      result.catch(() => undefined); // its rejection is not ours to report
      throw new ConfigError(
        'decode schema',
        'must validate synchronously (the job decodes on a synchronous hot path)',
        `a validator of ${schema['~standard'].vendor} that returned a Promise`,
      );
    }
    if (result.issues !== undefined) {
      throw new SchemaValidationError(result.issues.map(describeIssue));
    }
    return result.value;
  };
}

function describeIssue(issue: StandardSchemaV1.Issue): string {
  const path = (issue.path ?? [])
    .map((segment) => {
      const key = typeof segment === 'object' ? segment.key : segment;
      return typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
    })
    .join('')
    .replace(/^\./, '');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

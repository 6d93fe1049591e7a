// What each client receives of a job's target, per packing: one place for the README's table
// ("What a consumer sees of each packing", checked by test/unit/docs/interop-table.test.ts)
// and for the real-client tests that assert it (test/integration/interop-clients.test.ts for
// AMQP 1.0 and 0-9-1 and a user `encode`, test/integration/stock-client-view.test.ts for the
// stock stream client and readResults). Counts are for five results of three outputs.

export type Packing = 'single msgpack' | 'single json' | 'sections' | 'batch' | 'encode';

/** What one AMQP client gets: message count, content type, and the README cell. */
export interface AmqpView {
  readonly messages: number;
  readonly contentType: string | undefined;
  readonly cell: string;
}

export interface PackingRow {
  /** The README's first cell. */
  readonly label: string;
  /** Messages the stock stream consumer delivers (of 5 results, two sharing a chunk). */
  readonly stockMessages: number;
  readonly stock: string;
  readonly amqp10: AmqpView;
  readonly amqp091: AmqpView;
  readonly readResults: string;
}

const WHOLE = 'every result whole, at its offset';

export const INTEROP_CONTRACT: Readonly<Record<Packing, PackingRow>> = {
  'single msgpack': {
    stockMessages: 5,
    label: "`'single'` (default; msgpack, `application/msgpack`)",
    stock:
      'one message per result at its real offset, its content the whole result: a msgpack array of every section',
    amqp10: {
      messages: 5,
      contentType: 'application/msgpack',
      cell: 'one message per result at its real offset, its body the whole result (a msgpack array), content type `application/msgpack`',
    },
    amqp091: {
      messages: 5,
      contentType: 'application/msgpack',
      cell: 'the same, content type `application/msgpack`',
    },
    readResults: WHOLE,
  },
  'single json': {
    stockMessages: 5,
    label: "`'single'`, `format: 'json'`",
    stock: 'the same, the content plain JSON text (`JSON.parse` it)',
    amqp10: {
      messages: 5,
      contentType: 'application/json',
      cell: 'the same, the body JSON text, content type `application/json`',
    },
    amqp091: {
      messages: 5,
      contentType: 'application/json',
      cell: 'the same, the body JSON text, content type `application/json`',
    },
    readResults: WHOLE,
  },
  sections: {
    stockMessages: 5,
    label: "`'sections'`",
    stock:
      'one message per result at its real offset, but its content is only the LAST data section (the last output, or the late or dead-letter section); its content type `application/msgpack-seq` and the properties (`sw-outputs`, `sw-holds`) show more was there',
    amqp10: {
      messages: 5,
      contentType: 'application/msgpack-seq',
      cell: 'one message per result at its real offset, its body every data section (one msgpack map per section), content type `application/msgpack-seq`',
    },
    amqp091: {
      messages: 5,
      contentType: 'application/msgpack-seq',
      cell: "one message per result at its real offset, its body the sections' msgpack maps run together, content type `application/msgpack-seq`: a plain msgpack decode fails, a sequence decode (`decodeMulti`) gives every section",
    },
    readResults: WHOLE,
  },
  batch: {
    stockMessages: 12,
    label: "`'batch'`",
    stock:
      'each part of a batch numbered 0..n-1 instead of its real offset; of a chunk holding several batches only the FIRST batch is delivered, the others never (no error)',
    amqp10: {
      messages: 15,
      contentType: 'application/msgpack',
      cell: "one message per section at its real offset, its body that section (a msgpack map), content type `application/msgpack`; `sw-holds` names the section, an output's `sw-key`, `sw-output-start`/`-end` and `sw-final` route it",
    },
    amqp091: {
      messages: 15,
      contentType: 'application/msgpack',
      cell: 'the same, the properties as headers',
    },
    readResults: 'every result whole (parts reassembled), at its offset',
  },
  encode: {
    stockMessages: 5,
    label: 'your own `encode`, one body per result',
    stock: 'one message per result at its real offset, its content your body',
    amqp10: {
      messages: 5,
      contentType: undefined,
      cell: 'one message per result at its real offset, its body your bytes; no content type, no application properties',
    },
    amqp091: {
      messages: 5,
      contentType: undefined,
      cell: 'one message per result at its real offset, its body your bytes; no content type, no headers but `x-stream-offset`',
    },
    readResults: 'not the result format: read it with your own decoder',
  },
};

/** The README table's rows (cells without the pipes), in table order. */
export function interopTableRows(): string[][] {
  return Object.values(INTEROP_CONTRACT).map((row) => [
    row.label,
    row.stock,
    row.amqp10.cell,
    row.amqp091.cell,
    row.readResults,
  ]);
}

export const INTEROP_TABLE_HEADER = [
  'packing',
  'the stock JS stream consumer',
  'AMQP 1.0 (rhea)',
  'AMQP 0-9-1 (amqplib)',
  '`readResults`',
];

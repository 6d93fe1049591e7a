/**
 * The README's event-time timeline picture, as an SVG string written by hand (no
 * dependency): one tumbling window kind, messages in offset order drawn at their event
 * times, the watermark, a late message, the first result and the point a restart resumes
 * from. Every number drawn comes from replayTumbling over EXAMPLE, so the picture cannot
 * disagree with the rules. Pure and deterministic: same string every run.
 */
import {
  replayTumbling,
  type ReplayedMessage,
  type ReplayedResult,
  type TimelineRules,
  type WindowBounds,
} from './event-time-replay.js';

export const RULES: TimelineRules = { size: 10_000, grace: 5_000, maxOutOfOrderness: 2_000 };

/** Event times (s) by offset: out of order within grace, then one late message at offset 9. */
export const EXAMPLE_SECONDS: readonly number[] = [2, 4, 3, 12, 8, 14, 9, 16, 17, 7, 21, 13, 18];

const WIDTH = 1040;
const AXIS_X = 150;
const PX_PER_SECOND = 22;
const AXIS_SECONDS = 35;
const AXIS_Y = 74;
const BAND_Y = [86, 110];
const BAND_HEIGHT = 18;
const ROWS_Y = 160;
const ROW_HEIGHT = 30;
const FONT = 'font-family="Helvetica, Arial, sans-serif"';
const INK = '#1f2328';
const MUTED = '#59636e';
const GRID = '#d1d9e0';
const WATERMARK = '#8250df';
const LATE = '#cf222e';
const RESUME = '#0969da';
/** One colour per window, in window order. */
const WINDOW_COLOURS = ['#1a7f37', '#bf8700', '#0550ae'];

/** Fixed formatting: at most one decimal, never an exponent, so the output is stable. */
function num(value: number): string {
  const text = value.toFixed(1);
  return text.endsWith('.0') ? text.slice(0, -2) : text;
}

function seconds(ms: number): string {
  return `${num(ms / 1000)} s`;
}

function windowName(window: WindowBounds): string {
  return `[${num(window.start / 1000)},${num(window.end / 1000)})`;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const x = (ms: number): number => AXIS_X + (ms / 1000) * PX_PER_SECOND;
const rowTop = (offset: number): number => ROWS_Y + offset * ROW_HEIGHT;
const rowMiddle = (offset: number): number => rowTop(offset) + ROW_HEIGHT / 2;

interface TextOptions {
  readonly size?: number;
  readonly colour?: string;
  readonly anchor?: 'start' | 'middle' | 'end';
  readonly bold?: boolean;
  /** A white outline, so a label stays readable where it crosses a line. */
  readonly halo?: boolean;
}

function text(atX: number, atY: number, content: string, options: TextOptions = {}): string {
  const attributes = [
    `x="${num(atX)}"`,
    `y="${num(atY)}"`,
    FONT,
    `font-size="${num(options.size ?? 13)}"`,
    `fill="${options.colour ?? INK}"`,
    `text-anchor="${options.anchor ?? 'start'}"`,
    options.bold === true ? 'font-weight="bold"' : '',
    options.halo === true
      ? 'stroke="#ffffff" stroke-width="4" stroke-linejoin="round" paint-order="stroke"'
      : '',
  ].filter((attribute) => attribute !== '');
  return `<text ${attributes.join(' ')}>${escapeXml(content)}</text>`;
}

function line(x1: number, y1: number, x2: number, y2: number, style: string): string {
  return `<line x1="${num(x1)}" y1="${num(y1)}" x2="${num(x2)}" y2="${num(y2)}" ${style}/>`;
}

function dot(atX: number, atY: number, colour: string): string {
  return `<circle cx="${num(atX)}" cy="${num(atY)}" r="6" fill="${colour}"/>`;
}

function lateMark(atX: number, atY: number): string {
  const arm = 3.5;
  const cross = `stroke="${LATE}" stroke-width="2"`;
  return [
    `<circle cx="${num(atX)}" cy="${num(atY)}" r="7" fill="#ffffff" stroke="${LATE}" stroke-width="2"/>`,
    line(atX - arm, atY - arm, atX + arm, atY + arm, cross),
    line(atX - arm, atY + arm, atX + arm, atY - arm, cross),
  ].join('\n');
}

function diamond(atX: number, atY: number): string {
  const r = 8;
  const points = [
    [atX, atY - r],
    [atX + r, atY],
    [atX, atY + r],
    [atX - r, atY],
  ];
  const list = points.map(([px = 0, py = 0]) => `${num(px)},${num(py)}`).join(' ');
  return `<polygon points="${list}" fill="${INK}" stroke="#ffffff" stroke-width="1.5"/>`;
}

function arrow(path: string, colour: string): string {
  return `<path d="${path}" fill="none" stroke="${colour}" stroke-width="2" marker-end="url(#arrow)"/>`;
}

function colourOf(window: WindowBounds): string {
  return WINDOW_COLOURS[Math.floor(window.start / RULES.size) % WINDOW_COLOURS.length] ?? INK;
}

function defs(): string {
  const hatches = WINDOW_COLOURS.map(
    (colour, index) =>
      `<pattern id="grace-${index}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
      `<rect width="6" height="6" fill="#ffffff"/>${line(0, 0, 0, 6, `stroke="${colour}" stroke-width="2"`)}</pattern>`,
  );
  return [
    '<defs>',
    ...hatches,
    `<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">` +
      `<path d="M0,0 L10,5 L0,10 z" fill="${RESUME}"/></marker>`,
    '</defs>',
  ].join('\n');
}

function axis(): string {
  const parts = [
    text(20, AXIS_Y + 4, 'event time', { colour: MUTED }),
    line(x(0), AXIS_Y, x(AXIS_SECONDS * 1000), AXIS_Y, `stroke="${INK}" stroke-width="1.5"`),
  ];
  for (let second = 0; second <= AXIS_SECONDS; second += 5) {
    const at = x(second * 1000);
    parts.push(line(at, AXIS_Y - 5, at, AXIS_Y, `stroke="${INK}"`));
    parts.push(text(at, AXIS_Y - 9, seconds(second * 1000), { size: 12, anchor: 'middle' }));
  }
  return parts.join('\n');
}

/** The windows the axis shows, each followed by its grace, alternating between two bands. */
function windowBands(bottom: number): string {
  const parts = [text(20, (BAND_Y[0] ?? 0) + 13, 'windows', { colour: MUTED })];
  for (let start = 0; start + RULES.size <= AXIS_SECONDS * 1000; start += RULES.size) {
    const window = { start, end: start + RULES.size };
    const index = start / RULES.size;
    const top = BAND_Y[index % 2] ?? 0;
    const colour = colourOf(window);
    const graceEnd = Math.min(window.end + RULES.grace, AXIS_SECONDS * 1000);
    parts.push(
      line(x(start), top, x(start), bottom, `stroke="${GRID}" stroke-width="1"`),
      `<rect x="${num(x(start))}" y="${top}" width="${num(x(window.end) - x(start))}" height="${BAND_HEIGHT}" fill="${colour}" fill-opacity="0.18" stroke="${colour}"/>`,
      text((x(start) + x(window.end)) / 2, top + 13, windowName(window), {
        size: 12,
        anchor: 'middle',
        colour,
        bold: true,
      }),
      `<rect x="${num(x(window.end))}" y="${top}" width="${num(x(graceEnd) - x(window.end))}" height="${BAND_HEIGHT}" fill="url(#grace-${index % WINDOW_COLOURS.length})" fill-opacity="0.6" stroke="${colour}" stroke-dasharray="3 2"/>`,
      text((x(window.end) + x(graceEnd)) / 2, top + 13, 'grace', {
        size: 11,
        anchor: 'middle',
        halo: true,
      }),
    );
  }
  return parts.join('\n');
}

/** The watermark after each message: a staircase that only moves right. */
function watermarkLine(messages: readonly ReplayedMessage[]): string {
  const steps = messages.map(
    (m) => `H${num(x(m.watermarkAfter))} V${num(rowTop(m.offset) + ROW_HEIGHT)}`,
  );
  const first = messages[0];
  const start = first === undefined ? '' : `M${num(x(first.watermarkAfter))},${rowTop(0)} `;
  return `<path d="${start}${steps.join(' ')}" fill="none" stroke="${WATERMARK}" stroke-width="2.5"/>`;
}

function messageRows(messages: readonly ReplayedMessage[]): string {
  const parts = [
    text(20, ROWS_Y - 8, 'offset', { colour: MUTED }),
    text(WIDTH - 12, ROWS_Y - 8, 't · wm after', { colour: MUTED, anchor: 'end', size: 12 }),
  ];
  for (const m of messages) {
    const y = rowMiddle(m.offset);
    parts.push(
      line(AXIS_X, y, x(AXIS_SECONDS * 1000), y, `stroke="${GRID}" stroke-dasharray="1 4"`),
      text(20, y + 4, `offset ${m.offset}`),
      text(WIDTH - 12, y + 4, `${seconds(m.eventTime)} · ${seconds(m.watermarkAfter)}`, {
        colour: MUTED,
        anchor: 'end',
        size: 12,
      }),
      m.late ? lateMark(x(m.eventTime), y) : dot(x(m.eventTime), y, colourOf(m.window)),
    );
  }
  return parts.join('\n');
}

/** Labels on the message that shows grace at work, the late one, the result and the resume. */
function story(messages: readonly ReplayedMessage[], result: ReplayedResult): string {
  const withinGrace = messages.find((m) => !m.late && m.eventTime < m.watermarkBefore);
  const late = messages.find((m) => m.late && m.offset > result.publishingId);
  const closed = result.closed[0];
  const decision = messages[result.publishingId];
  const resumed = messages[result.resumeOffset];
  const resumeMax = messages.find(
    (m) => m.offset < result.resumeOffset && m.eventTime === result.resumeMaxEventTime,
  );
  if (
    withinGrace === undefined ||
    late === undefined ||
    closed === undefined ||
    decision === undefined ||
    resumed === undefined ||
    resumeMax === undefined ||
    result.resumeMaxEventTime === undefined ||
    result.resumeOffset >= result.publishingId
  ) {
    throw new Error('EXAMPLE no longer shows grace, a late message, a result and a resume point');
  }
  const labelX = (m: ReplayedMessage): number => x(m.eventTime) + 14;
  const closeX = x(closed.end + RULES.grace);
  const decisionY = rowMiddle(decision.offset);
  const resumeY = rowMiddle(resumed.offset);
  const lane = AXIS_X - 34;
  return [
    `<circle cx="${num(x(resumeMax.eventTime))}" cy="${num(rowMiddle(resumeMax.offset))}" r="10" fill="none" stroke="${RESUME}" stroke-width="1.5"/>`,
    line(
      closeX,
      (BAND_Y[1] ?? 0) + BAND_HEIGHT,
      closeX,
      decisionY,
      `stroke="${INK}" stroke-width="1.5" stroke-dasharray="5 4"`,
    ),
    text(
      closeX + 6,
      ROWS_Y - 8,
      `${windowName(closed)} closes when wm reaches end + grace = ${seconds(closed.end + RULES.grace)}`,
      { size: 12, halo: true },
    ),
    text(
      labelX(withinGrace),
      rowMiddle(withinGrace.offset) + 4,
      `behind the watermark (${seconds(withinGrace.watermarkBefore)}) but within grace: added`,
      { size: 12, halo: true },
    ),
    text(
      labelX(late),
      rowMiddle(late.offset) + 4,
      `late: window ${windowName(late.window)} closed`,
      {
        colour: LATE,
        bold: true,
        halo: true,
      },
    ),
    diamond(closeX, decisionY),
    text(labelX(decision), decisionY + 4, `result, publishing id D = ${result.publishingId}`, {
      bold: true,
      halo: true,
    }),
    arrow(
      `M${num(AXIS_X - 4)},${num(decisionY)} C${num(lane)},${num(decisionY)} ${num(lane)},${num(resumeY)} ${num(AXIS_X - 4)},${num(resumeY)}`,
      RESUME,
    ),
    text(
      labelX(resumed),
      resumeY + 4,
      `resume offset R = ${result.resumeOffset} = first offset of window ${windowName(resumed.window)}`,
      { colour: RESUME, bold: true, halo: true },
    ),
    text(
      labelX(resumed),
      resumeY - ROW_HEIGHT + 4,
      `resume watermark = ${seconds(result.resumeMaxEventTime - RULES.maxOutOfOrderness)} (max event time before R, ringed, − ${seconds(RULES.maxOutOfOrderness)})`,
      { colour: RESUME, halo: true },
    ),
  ].join('\n');
}

function legend(top: number): string {
  const rows = [
    [
      dot(28, top, WINDOW_COLOURS[0] ?? INK) +
        dot(44, top, WINDOW_COLOURS[1] ?? INK) +
        dot(60, top, WINDOW_COLOURS[2] ?? INK),
      'a message at its event time, coloured by its window; one row per offset, in read order',
    ],
    [
      lateMark(44, top + 24),
      'late: all its windows closed (end + grace ≤ watermark before it); goes to the next result',
    ],
    [
      line(24, top + 48, 64, top + 48, `stroke="${WATERMARK}" stroke-width="2.5"`),
      `watermark after each message = max event time so far − maxOutOfOrderness (${seconds(RULES.maxOutOfOrderness)})`,
    ],
    [
      `<rect x="24" y="${top + 64}" width="40" height="14" fill="url(#grace-0)" fill-opacity="0.6" stroke="${WINDOW_COLOURS[0] ?? INK}" stroke-dasharray="3 2"/>`,
      `grace (${seconds(RULES.grace)}): a window of ${seconds(RULES.size)} still takes messages until the watermark reaches end + grace`,
    ],
    [
      diamond(44, top + 96),
      'windows close: ONE result for all that close at a message; its publishing id is that offset',
    ],
    [
      arrow(`M24,${top + 120} L64,${top + 120}`, RESUME),
      'restart: re-read the source from R with the resume watermark; the broker drops ids it has',
    ],
  ] as const;
  return rows
    .map(([symbol, caption], index) => [symbol, text(80, top + index * 24 + 4, caption)].join('\n'))
    .join('\n');
}

/** The whole picture for EXAMPLE under RULES. */
export function eventTimeTimelineSvg(): string {
  const replay = replayTumbling(
    EXAMPLE_SECONDS.map((second) => second * 1000),
    RULES,
  );
  const result = replay.results[0];
  if (result === undefined) throw new Error('EXAMPLE publishes no result');
  const rowsBottom = rowTop(replay.messages.length);
  const legendTop = rowsBottom + 34;
  const height = legendTop + 6 * 24 + 8;
  const title =
    `Event-time tumbling windows: size ${seconds(RULES.size)}, grace ${seconds(RULES.grace)}, ` +
    `maxOutOfOrderness ${seconds(RULES.maxOutOfOrderness)}`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}">`,
    `<title>${escapeXml(title)}</title>`,
    defs(),
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    text(20, 28, title, { size: 16, bold: true }),
    axis(),
    windowBands(rowsBottom),
    watermarkLine(replay.messages),
    messageRows(replay.messages),
    story(replay.messages, result),
    line(20, rowsBottom + 12, WIDTH - 12, rowsBottom + 12, `stroke="${GRID}"`),
    legend(legendTop),
    '</svg>',
    '',
  ].join('\n');
}

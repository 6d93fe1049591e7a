/**
 * npm run docs:timeline: writes docs/event-time-timeline.svg, the README's picture of
 * watermark, grace, lateness and recovery. test/unit/docs/event-time-timeline.test.ts fails
 * when the committed file differs from what this writes.
 */
import { writeFileSync } from 'node:fs';
import { eventTimeTimelineSvg } from './timeline/timeline-svg.js';

const TIMELINE_SVG = new URL('../docs/event-time-timeline.svg', import.meta.url);

writeFileSync(TIMELINE_SVG, eventTimeTimelineSvg());
console.log(`wrote ${TIMELINE_SVG.pathname}`);

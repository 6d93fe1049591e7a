// The pipeline example's two jobs on both brokers, with the same stream names (they are in
// the results): both stages' targets must be byte-identical.
import { describe, expect, it } from 'vitest';
import type { PackMode } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { minutesOfReadings, stageOne, stageTwo } from '../../examples/pipeline-stages.js';
import { publishAll, rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';

const real = rabbitForTests();

type Streams = Record<'sensors' | 'minutes' | 'hours', string>;

async function onMemory(streams: Streams, pack: PackMode): Promise<Buffer[][]> {
  const broker = new MemoryBroker();
  for (const stream of Object.values(streams)) broker.createStream(stream);
  for (const minute of minutesOfReadings()) broker.append(streams.sensors, minute);
  const { sensors, minutes, hours } = streams;
  await stageOne(broker.source(sensors), broker.target(minutes, { producer: 'stage-1' }), pack).run(
    {
      untilCaughtUp: true,
    },
  );
  await stageTwo(broker.source(minutes), broker.target(hours, { producer: 'stage-2' })).run({
    untilCaughtUp: true,
  });
  return [minutes, hours].map((s) => broker.messages(s).map((m) => Buffer.from(m.bytes)));
}

async function onRabbit(streams: Streams, pack: PackMode): Promise<Buffer[][]> {
  const { sensors, minutes, hours } = streams;
  for (const stream of Object.values(streams)) await real.rabbit.createStream(stream);
  try {
    await publishAll(real.rabbit, sensors, minutesOfReadings().flat());
    const one = real.rabbit.target(minutes, { producer: 'stage-1' });
    await stageOne(real.rabbit.source(sensors), one, pack).run({ untilCaughtUp: true });
    await one.close();
    const two = real.rabbit.target(hours, { producer: 'stage-2' });
    await stageTwo(real.rabbit.source(minutes), two).run({ untilCaughtUp: true });
    await two.close();
    return await Promise.all(
      [minutes, hours].map(async (s) => (await readAll(real.rabbit, s)).map((b) => Buffer.from(b))),
    );
  } finally {
    for (const stream of Object.values(streams)) await real.rabbit.deleteStream(stream);
  }
}

describe('the pipeline example on the embedded broker and RabbitMQ', () => {
  it.each<[PackMode, number]>([
    ['sections', 1],
    ['batch', 3],
  ])(
    "should write byte-identical per-minute and per-hour targets with stage 1 packed as '%s'",
    async (pack, messagesPerMinute) => {
      const streams = {
        sensors: uniqueStream('pipeline-sensors'),
        minutes: uniqueStream('pipeline-minutes'),
        hours: uniqueStream('pipeline-hours'),
      };
      const [memoryMinutes, memoryHours] = await onMemory(streams, pack);
      const [rabbitMinutes, rabbitHours] = await onRabbit(streams, pack);
      expect(memoryMinutes).toHaveLength((3 * 60 + 1) * messagesPerMinute);
      expect(memoryHours).toHaveLength(3);
      expect(rabbitMinutes).toEqual(memoryMinutes);
      expect(rabbitHours).toEqual(memoryHours);
    },
  );
});

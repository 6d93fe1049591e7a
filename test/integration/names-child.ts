// The child process of rabbitmq-names.test.ts: publishes one message to STREAM under the
// producer name NAME and prints 'published <last publishing id>', or dies trying.
//   stock URL STREAM NAME: with rabbitmq-stream-js-client alone, as another service would
//     (nothing of ours is loaded, so none of our workarounds applies).
//   ours URL STREAM NAME: through our adapter.
import { silentLogger } from '../../src/common/logger.js';

const [mode, url, stream, name] = process.argv.slice(2);
if (url === undefined || stream === undefined || name === undefined) {
  throw new Error('usage: names-child.ts stock|ours URL STREAM NAME');
}

if (mode === 'stock') {
  const { connect } = await import('rabbitmq-stream-js-client');
  const where = new URL(url);
  const client = await connect(
    {
      hostname: where.hostname,
      port: Number(where.port),
      username: decodeURIComponent(where.username),
      password: decodeURIComponent(where.password),
      vhost: '/',
    },
    silentLogger,
  );
  const publisher = await client.declarePublisher({ stream, publisherRef: name });
  await publisher.basicSend(1n, Buffer.from('one'));
  process.stdout.write(`published ${await publisher.getLastPublishingId()}\n`);
  await client.close();
} else if (mode === 'ours') {
  const { connect } = await import('../../src/rabbitmq/index.js');
  const rabbit = await connect(url);
  const target = rabbit.target(stream, { producer: name });
  await target.publish(1n, [Buffer.from('one')]);
  process.stdout.write(`published ${await target.lastPublishingId()}\n`);
  await rabbit.close();
} else {
  throw new Error(`unknown mode ${mode}`);
}

// --url (and RABBITMQ_STREAM_URL) take the nodes of one cluster separated by commas, so a
// command still reaches the cluster while the first node is down, as connect() does.
import { describe, expect, it } from 'vitest';
import { brokerUrls } from '../../../src/cli/broker-urls.js';
import { ConfigError } from '../../../src/index.js';
import { runRecorded } from '../../support/clients/cli-run.js';

const NODES = [
  'rabbitmq-stream://u:p@10.0.0.1:5561/v',
  'rabbitmq-stream://u:p@10.0.0.2:5562/v',
  'rabbitmq-stream://u:p@10.0.0.3:5563/v',
];

describe('the brokers --url names', () => {
  it('are one URL as given', () => {
    expect(brokerUrls(NODES[0] as string)).toEqual([NODES[0]]);
  });

  it('are every node of a comma-separated list, in order, spaces around the commas dropped', () => {
    expect(brokerUrls(NODES.join(','))).toEqual(NODES);
    expect(brokerUrls(NODES.join(' , '))).toEqual(NODES);
  });

  it('refuse a list with a malformed or empty URL, naming which', () => {
    expect(() => brokerUrls(`${NODES[0]},amqp://h/`)).toThrow(
      "urls[1] must start with rabbitmq-stream:// or rabbitmq-stream+tls://, given: 'amqp://h/'",
    );
    expect(() => brokerUrls(`${NODES[0]},`)).toThrow(ConfigError);
  });

  it('refuse a list whose nodes sign in differently (not one cluster)', () => {
    expect(() => brokerUrls(`${NODES[0]},rabbitmq-stream://other:p@10.0.0.2:5562/v`)).toThrow(
      "urls[1] must have urls[0]'s user, password, virtual host and scheme (one cluster)",
    );
  });

  it('make a malformed list a usage error of the command, before it connects', async () => {
    expect(
      await runRecorded([
        'status',
        '--source',
        's',
        '--target',
        't',
        '--producer',
        'p',
        '--url',
        `${NODES[0]},amqp://h/`,
      ]),
    ).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "stream-windows: urls[1] must start with rabbitmq-stream:// or rabbitmq-stream+tls://, given: 'amqp://h/'\nRun 'stream-windows help status' for usage.\n",
    });
  });
});

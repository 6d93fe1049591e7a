// One part of the orders example's chain in a process of its own, on the real servers (see
// ./killed-lane.ts): `chain-child.ts <relay|job|sink> <schema> <orders stream> <revenue
// stream>`, connected through POSTGRES_URL and RABBITMQ_STREAM_URL. It runs until it is killed;
// it prints 'running' once it starts.
import { joinServers } from './orders-servers.js';
import { chainPart, ROLES, type Role } from './orders-chain.js';

const [role, schema = '', ordersStream = '', revenueStream = ''] = process.argv.slice(2);
if (!ROLES.includes(role as Role)) throw new Error(`no such part of the chain: '${role}'`);
// The example's process is gone (its end closes this pipe): so is its chain.
process.stdin.on('end', () => process.exit(1)).resume();
const servers = await joinServers({ schema, ordersStream, revenueStream }, process.env);
const part = chainPart(role as Role, servers);
console.log('running');
await part.run();

// Imported first by every worker thread of a PartitionWorkers test: on Node 20 a worker does
// not inherit the tsx loader, so the library's worker entry and the job module (TypeScript,
// run from source) need it registered in the thread.
import { register } from 'tsx/esm/api';

register();

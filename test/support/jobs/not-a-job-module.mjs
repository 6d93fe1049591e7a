// A module PartitionWorkers cannot run: it exports no function building a job.
export const job = 'not a function';

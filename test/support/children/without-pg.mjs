// Imported (node --import) by a child that must run as on a machine without the optional peer
// dependency `pg`: 'pg' is resolved from a folder that has no node_modules, so Node itself
// fails to find the package, as it would where it is not installed.
import { register } from 'node:module';

const hook = `export async function resolve(specifier, context, next) {
  if (specifier !== 'pg') return next(specifier, context);
  return next(specifier, { ...context, parentURL: 'file:///nonexistent-folder/importer.mjs' });
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);

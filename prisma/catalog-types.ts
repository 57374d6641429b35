// Workaround for prisma/orm#27403, needed only by the Prisma CLI (migrate) on the WASM engine:
// @prisma/adapter-pg cannot deserialize some PostgreSQL catalog column types (name, char,
// int2vector, regproc, oidvector, pg_node_tree, regclass) that the schema engine reads while
// migrating. Reporting those columns as text makes the engine accept them. The application's
// Prisma client never needs this and does not load it.
import { createRequire } from 'node:module';

const CATALOG_TYPE_OIDS = new Set([18, 19, 22, 24, 30, 194, 2205]);
const TEXT_OID = 25;

interface FieldDescription {
  dataTypeID: number;
}
interface ResultPrototype {
  addFields(fields: FieldDescription[]): void;
}

export function reportCatalogTypesAsText(): void {
  // Resolve pg the way @prisma/adapter-pg does, so the patched class is the one it uses.
  const adapterRequire = createRequire(require.resolve('@prisma/adapter-pg'));
  const Result = adapterRequire('pg/lib/result') as { prototype: ResultPrototype };
  const addFields = Result.prototype.addFields;
  Result.prototype.addFields = function (this: ResultPrototype, fields: FieldDescription[]) {
    for (const field of fields) {
      if (CATALOG_TYPE_OIDS.has(field.dataTypeID)) field.dataTypeID = TEXT_OID;
    }
    addFields.call(this, fields);
  };
}

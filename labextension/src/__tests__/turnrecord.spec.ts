import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

const SCRIPT = path.resolve(__dirname, '..', '..', 'scripts', 'schema.js');
const OUTPUT = path.resolve(__dirname, '..', 'turnrecord.ts');

describe('src/turnrecord.ts', () => {
  it('is what `npm run build:schema` makes of the JSON Schema', () => {
    const expected = execFileSync(process.execPath, [SCRIPT, '--stdout'], {
      encoding: 'utf-8'
    });
    const committed = fs.readFileSync(OUTPUT, 'utf-8');
    if (committed !== expected) {
      throw new Error(
        'src/turnrecord.ts is out of date with ' +
          'jupyter_memory/schemas/turn-record.v4.json: run `npm run build:schema`.'
      );
    }
  });
});

/**
 * The turn records of the notebook an output belongs to, and that notebook's path.
 *
 * A record (version 2 and later) stores each request part once, in the first
 * output of its session that needed it, so a later turn's requests can only be
 * rebuilt with the earlier outputs' parts. A mime renderer sees one output, so
 * the notebook plugin (index.ts) registers a source that finds the notebook
 * holding a record and lists that notebook's turn records in cell order; tests
 * and front ends without notebooks leave it unset.
 */

/** The turn records of one notebook, in cell order, and its path from the server root. */
export interface INotebookTurns {
  path: string | null;
  records: Record<string, unknown>[];
}

/** Finds the notebook holding `record`, or null. */
export type TurnSource = (
  record: Record<string, unknown>
) => INotebookTurns | null;

let source: TurnSource | null = null;

/** Register (or with null, remove) the source of notebook turns. */
export function setTurnSource(next: TurnSource | null): void {
  source = next;
}

/** The notebook turns of `record`'s notebook, or null when no source knows it. */
export function notebookTurns(
  record: Record<string, unknown>
): INotebookTurns | null {
  if (!source) {
    return null;
  }
  try {
    return source(record);
  } catch (error) {
    console.warn(
      'jupyter-memory: could not read the notebook of a turn',
      error
    );
    return null;
  }
}

/** Whether two records are the same turn: one session, one turn, one start. */
export function sameTurn(
  a: Record<string, unknown>,
  b: Record<string, unknown>
): boolean {
  return (
    a === b ||
    (a.session_id === b.session_id &&
      a.turn === b.turn &&
      a.started === b.started &&
      a.session_id !== undefined)
  );
}

/** A path as one shell word (POSIX quoting), as the Python side's `shlex.quote`. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text)
    ? text
    : `'${text.replace(/'/g, "'\"'\"'")}'`;
}

/** The command that prints call `call` of turn `turn` of `path` whole. */
export function requestCommand(
  path: string | null,
  turn: number | string,
  call: number
): string {
  const where = path ? shellWord(path) : 'NOTEBOOK';
  return `jupyter-memory request ${where} --turn ${turn} --call ${call}`;
}

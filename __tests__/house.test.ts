import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/**
 * The rules of src/'s layout (src/README.md): no import cycle, type-only imports included; few
 * files at its root; no file grows past the size a reader takes in at once.
 */
const SRC = resolve(__dirname, '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The src/ files a file imports or re-exports from, `import type` and `import()` included. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolveSource(resolve(dirname(file), name)))
    .filter((path): path is string => path !== undefined && path.startsWith(`${SRC}/`));
}

function resolveSource(path: string): string | undefined {
  for (const candidate of [`${path}.ts`, join(path, 'index.ts'), path]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** Every import cycle, each as the files around it (Tarjan's strongly connected components). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file) as number);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file) as number, index.get(next) as number));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(relative(SRC, member));
    } while (member !== file);
    const selfImport = graph.get(file)?.includes(file) ?? false;
    if (component.length > 1 || selfImport) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

const files = sourceFiles(SRC).filter((file) => !file.endsWith('.generated.ts'));

/** The layers of src/README.md, lowest first: a room imports only from its own and lower ones. */
const LAYERS = [
  ['util'],
  ['errors.ts'],
  ['events.ts'],
  ['redis'],
  ['protocol'],
  ['ownership'],
  ['waiting'],
  ['leases'],
  ['context.ts'],
  ['locks', 'synchronizers'],
  ['client'],
  ['index.ts', 'otel'],
  ['cli'],
];

/** A file's room: its folder under src/, or the file itself at the root. */
function roomOf(file: string): string {
  return relative(SRC, file).split('/')[0] as string;
}

function layerOf(room: string): number {
  const layer = LAYERS.findIndex((rooms) => rooms.includes(room));
  if (layer < 0) throw new Error(`src/${room} is in no layer of src/README.md`);
  return layer;
}

/** Within a room, or to a lower layer: two rooms of one layer do not import each other. */
function pointsDown(file: string, target: string): boolean {
  return roomOf(file) === roomOf(target) || layerOf(roomOf(target)) < layerOf(roomOf(file));
}

describe('the layout of src/', () => {
  test('no import cycle, type-only imports counted', () => {
    const graph = new Map(files.map((file) => [file, importsOf(file)]));
    expect(cycles(graph)).toEqual([]);
  });

  test('the checkers find a cycle and an import that points up, type-only included', () => {
    const [a, b, c] = ['x/a.ts', 'x/b.ts', 'x/c.ts'].map((file) => join(SRC, file)) as [
      string,
      string,
      string,
    ];
    const graph = new Map([
      [a, [b]],
      [b, [c]],
      [c, [a]],
    ]);
    expect(cycles(graph)).toEqual([['x/a.ts', 'x/b.ts', 'x/c.ts']]);
    expect(pointsDown(join(SRC, 'redis/resend.ts'), join(SRC, 'waiting/acquire-or-wait.ts'))).toBe(false);
    expect(pointsDown(join(SRC, 'locks/fair-lock.ts'), join(SRC, 'synchronizers/synchronizer.ts'))).toBe(
      false,
    );
    expect(pointsDown(join(SRC, 'waiting/x.ts'), join(SRC, 'redis/y.ts'))).toBe(true);
    const typeOnly = ts.preProcessFile(
      "import type { A } from './a';\nexport type { B } from './b';",
      true,
      true,
    );
    expect(typeOnly.importedFiles.map(({ fileName }) => fileName)).toEqual(['./a', './b']);
  });

  test('imports point only down the layers of src/README.md, type-only imports included', () => {
    const up = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => !pointsDown(file, target))
        .map((target) => `${relative(SRC, file)} -> ${relative(SRC, target)}`),
    );
    expect(up).toEqual([]);
  });

  test('at most eight files at the root of src/: the rest lives in the folder of its concern', () => {
    const root = files.filter((file) => dirname(file) === SRC).map((file) => relative(SRC, file));
    expect(root.length).toBeLessThanOrEqual(8);
  });

  test('no source file past 500 lines: a file a reader takes in at once', () => {
    const over = files
      .map((file) => ({
        file: relative(SRC, file),
        lines: readFileSync(file, 'utf8').split('\n').length - 1,
      }))
      .filter(({ lines }) => lines > 500);
    expect(over).toEqual([]);
  });
});

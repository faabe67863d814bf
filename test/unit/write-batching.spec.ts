import { WriteBatcher, WriteWindow, type Corkable } from '../../lib/core/voter/write-batching.js';

/** A socket stand-in that records when it was corked and uncorked (no I/O involved). */
class RecordingSocket implements Corkable {
  readonly log: string[] = [];
  corked = 0;
  cork(): void {
    this.corked++;
    this.log.push('cork');
  }
  uncork(): void {
    this.corked--;
    this.log.push('uncork');
  }
}

/** The next turn of the event loop: after every process.nextTick callback of this one. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('WriteBatcher: one socket write per tick for batches, none held back for a lone command', () => {
  test('a lone command per tick is never corked', async () => {
    const window = new WriteWindow();
    const socket = new RecordingSocket();
    const batcher = new WriteBatcher(window);
    for (let tick = 0; tick < 5; tick++) {
      batcher.beforeWrite(socket);
      await nextTurn();
    }
    expect(socket.log).toEqual([]);
  });

  test('from the second command of a tick the socket is corked, once, and uncorked before the next turn', async () => {
    const window = new WriteWindow();
    const socket = new RecordingSocket();
    const batcher = new WriteBatcher(window);
    batcher.beforeWrite(socket);
    expect(socket.corked).toBe(0); // the first one goes out at once
    batcher.beforeWrite(socket);
    batcher.beforeWrite(socket);
    expect(socket.log).toEqual(['cork']);
    await nextTurn();
    expect(socket.log).toEqual(['cork', 'uncork']);
    expect(socket.corked).toBe(0);
  });

  test('after a tick with several commands, the first command of the next one is corked too; after a lone one, not', async () => {
    const window = new WriteWindow();
    const socket = new RecordingSocket();
    const batcher = new WriteBatcher(window);
    batcher.beforeWrite(socket);
    batcher.beforeWrite(socket); // a batch
    await nextTurn();
    socket.log.length = 0;

    batcher.beforeWrite(socket); // steady load: expected to be followed by more
    expect(socket.log).toEqual(['cork']);
    await nextTurn();
    expect(socket.log).toEqual(['cork', 'uncork']);
    socket.log.length = 0;

    batcher.beforeWrite(socket); // the last tick had a lone command: this one goes out at once
    expect(socket.log).toEqual([]);
    await nextTurn();
    expect(socket.log).toEqual([]);
  });

  test('sockets corked in the same tick are all uncorked at its end, each by its own batcher', async () => {
    const window = new WriteWindow();
    const sockets = [new RecordingSocket(), new RecordingSocket(), new RecordingSocket()];
    const batchers = sockets.map(() => new WriteBatcher(window));
    for (let i = 0; i < 3; i++) {
      batchers[i]!.beforeWrite(sockets[i]!);
      if (i > 0) batchers[i]!.beforeWrite(sockets[i]!); // sockets 1 and 2 get two commands
    }
    expect(sockets.map((s) => s.corked)).toEqual([0, 1, 1]);
    await nextTurn();
    expect(sockets.map((s) => s.log)).toEqual([[], ['cork', 'uncork'], ['cork', 'uncork']]);
  });

  test('corkUntilClose (a Cluster corking every master): each cork is undone once at the end of the tick', async () => {
    const window = new WriteWindow();
    const socket = new RecordingSocket();
    window.corkUntilClose(socket);
    window.corkUntilClose(socket);
    expect(socket.corked).toBe(2);
    await nextTurn();
    expect(socket.corked).toBe(0);
    expect(socket.log).toEqual(['cork', 'cork', 'uncork', 'uncork']);
  });

  test('handedOver: at once when nothing is corked; after the uncork when a socket waits for the end of the tick', async () => {
    const window = new WriteWindow();
    const socket = new RecordingSocket();
    const batcher = new WriteBatcher(window);
    batcher.beforeWrite(socket); // out at once
    let handedOver = false;
    void window.handedOver().then(() => (handedOver = true));
    await Promise.resolve();
    expect(handedOver).toBe(true);
    await nextTurn();

    batcher.beforeWrite(socket);
    batcher.beforeWrite(socket); // corked until the end of the tick
    const seen: string[] = [];
    void window.handedOver().then(() => seen.push(`handed over after ${socket.log.join(', ')}`));
    await Promise.resolve();
    await Promise.resolve();
    expect(seen).toEqual([]); // microtasks of this tick run before the window closes
    await nextTurn();
    expect(seen).toEqual(['handed over after cork, uncork']);
  });

  test('each engine has its own window: writes corked by one engine do not hold back the hand-over of another', async () => {
    const [mine, theirs] = [new WriteWindow(), new WriteWindow()];
    const [myBatcher, theirBatcher] = [new WriteBatcher(mine), new WriteBatcher(theirs)];
    const [mySocket, theirSocket] = [new RecordingSocket(), new RecordingSocket()];
    theirBatcher.beforeWrite(theirSocket);
    theirBatcher.beforeWrite(theirSocket); // corked in their window
    myBatcher.beforeWrite(mySocket); // a lone command: out at once
    let handedOver = false;
    void mine.handedOver().then(() => (handedOver = true));
    await Promise.resolve();
    expect(handedOver).toBe(true); // not at the end of their tick
    expect(theirSocket.corked).toBe(1);
    expect(mySocket.log).toEqual([]);
    await nextTurn();
    expect(theirSocket.log).toEqual(['cork', 'uncork']);
  });
});

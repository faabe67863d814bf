import { createServer } from 'node:net';
/** A TCP port that was free on `host` a moment ago (the OS picks it). */
export function freePort(host = '127.0.0.1') {
    return new Promise((resolve, reject) => {
        const server = createServer();
        server.unref();
        server.on('error', reject);
        server.listen(0, host, () => {
            const address = server.address();
            const port = typeof address === 'object' && address ? address.port : 0;
            server.close(() => resolve(port));
        });
    });
}
//# sourceMappingURL=free-port.js.map
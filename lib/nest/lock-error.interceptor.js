var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
import { ConflictException, Injectable, ServiceUnavailableException, } from '@nestjs/common';
import { catchError, throwError } from 'rxjs';
import { LockNotAcquiredError, QuorumUnavailableError } from '../core/errors.js';
/**
 * Registered by RedlockModule for the whole application. In HTTP, a busy lock becomes
 * 409 Conflict with a `Retry-After` header (seconds until the holder's lease ends), and a lost
 * quorum becomes 503 Service Unavailable. Other contexts (RPC, WebSockets) get the typed error.
 */
let LockErrorInterceptor = class LockErrorInterceptor {
    intercept(context, next) {
        if (context.getType() !== 'http')
            return next.handle();
        return next.handle().pipe(catchError((err) => {
            if (err instanceof LockNotAcquiredError) {
                setHeader(context, 'Retry-After', String(err.retryAfterSeconds));
                return throwError(() => new ConflictException({ statusCode: 409, error: 'Conflict', message: err.message, retryAfterMs: err.retryAfterMs }, { cause: err }));
            }
            if (err instanceof QuorumUnavailableError) {
                setHeader(context, 'Retry-After', '1');
                return throwError(() => new ServiceUnavailableException({ statusCode: 503, error: 'Service Unavailable', message: 'Distributed lock quorum unavailable; retry shortly.' }, { cause: err }));
            }
            return throwError(() => err);
        }));
    }
};
LockErrorInterceptor = __decorate([
    Injectable()
], LockErrorInterceptor);
export { LockErrorInterceptor };
function setHeader(context, name, value) {
    const response = context.switchToHttp().getResponse();
    if (typeof response.setHeader === 'function')
        response.setHeader(name, value);
    else
        response.header?.(name, value);
}
//# sourceMappingURL=lock-error.interceptor.js.map
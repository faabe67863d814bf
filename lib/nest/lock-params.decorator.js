import { FENCING_TOKEN_PARAM, LOCK_SIGNAL_PARAM } from './redlock.constants.js';
function recordParameter(key, name) {
    return (target, propertyKey, index) => {
        if (propertyKey === undefined) {
            throw new TypeError(`@${name}() belongs on a method parameter, not a constructor parameter`);
        }
        Reflect.defineMetadata(key, index, target, propertyKey);
    };
}
/**
 * Receives the fencing token (a number) of the lock `@DistributedLock` took for this call. Works
 * on route handlers (beside `@Param`, `@Body`) and on plain service methods. Send it with every
 * write to the protected resource; the resource must refuse tokens lower than the last it saw.
 */
export const FencingToken = () => recordParameter(FENCING_TOKEN_PARAM, 'FencingToken');
/**
 * Receives an `AbortSignal` that aborts the moment the lock is lost (its reason is a
 * `LockLostError`) or released. Pass it to fetch/DB calls, or check `signal.aborted` between steps.
 */
export const LockSignal = () => recordParameter(LOCK_SIGNAL_PARAM, 'LockSignal');
//# sourceMappingURL=lock-params.decorator.js.map
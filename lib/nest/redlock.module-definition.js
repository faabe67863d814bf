import { ConfigurableModuleBuilder } from '@nestjs/common';
export const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN, OPTIONS_TYPE, ASYNC_OPTIONS_TYPE } = new ConfigurableModuleBuilder({ moduleName: 'Redlock' })
    .setClassMethodName('forRoot')
    .setFactoryMethodName('createRedlockOptions')
    .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
    .build();
/** Injection token of the resolved module options. */
export const REDLOCK_MODULE_OPTIONS = MODULE_OPTIONS_TOKEN;
//# sourceMappingURL=redlock.module-definition.js.map
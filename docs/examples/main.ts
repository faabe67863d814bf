// The README's Quick start, file src/main.ts (README.md shows it from the first import on).
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

const app = await NestFactory.create(AppModule);
// On SIGTERM / SIGINT: Nest closes the app; running locked work drains, then locks are released.
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT ?? 3000));

import { Body, Controller, Get, HttpCode, Param, ParseIntPipe, Post, Put } from '@nestjs/common';
import type { Account } from './account-store.js';
import { AccountsService, type Withdrawal } from './accounts.service.js';

@Controller('accounts')
export class AccountsController {
  constructor(private readonly accounts: AccountsService) {}

  /** Opens (or resets) an account: `PUT /accounts/alice {"balance": 10000}`. */
  @Put(':id')
  open(@Param('id') id: string, @Body('balance', ParseIntPipe) balance: number): Promise<Account> {
    return this.accounts.open(id, balance);
  }

  @Get(':id')
  get(@Param('id') id: string): Promise<Account> {
    return this.accounts.get(id);
  }

  /**
   * `POST /accounts/alice/withdraw {"amount": 100}`: 200 with the new balance; 409 + Retry-After
   * when the account stays locked for 5 s; 422 on insufficient funds; 503 without a lock quorum.
   */
  @Post(':id/withdraw')
  @HttpCode(200)
  withdraw(@Param('id') id: string, @Body('amount', ParseIntPipe) amount: number): Promise<Withdrawal> {
    return this.accounts.withdraw(id, amount);
  }
}

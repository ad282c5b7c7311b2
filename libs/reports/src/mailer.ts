import nodemailer, { type Transporter } from 'nodemailer';
import type { AppConfig } from '@abacus/configs';

export interface MailMessage {
  to: string;
  subject: string;
  html: string;
  text: string;
  /** stable across retries, so a receiving system can drop a duplicate */
  messageId: string;
}

/** E-mail through the configured SMTP server (nodemailer); absent when ABACUS_SMTP_HOST is unset. */
export class Mailer {
  private readonly transport: Transporter;

  constructor(
    private readonly from: string,
    options: { host: string; port: number; secure: boolean; user?: string; password?: string },
  ) {
    this.transport = nodemailer.createTransport({
      host: options.host,
      port: options.port,
      secure: options.secure,
      ...(options.user ? { auth: { user: options.user, pass: options.password } } : {}),
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    });
  }

  static fromConfig(config: AppConfig): Mailer | null {
    if (!config.ABACUS_SMTP_HOST || !config.ABACUS_SMTP_FROM) return null;
    return new Mailer(config.ABACUS_SMTP_FROM, {
      host: config.ABACUS_SMTP_HOST,
      port: config.ABACUS_SMTP_PORT,
      secure: config.ABACUS_SMTP_SECURE,
      user: config.ABACUS_SMTP_USER,
      password: config.ABACUS_SMTP_PASSWORD,
    });
  }

  async send(m: MailMessage): Promise<void> {
    await this.transport.sendMail({
      from: this.from,
      to: m.to,
      subject: m.subject,
      html: m.html,
      text: m.text,
      messageId: m.messageId,
    });
  }

  close(): void {
    this.transport.close();
  }
}

import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A business line (domain): feed, search, mall... Every other row names the line it belongs to. */
@Entity({ name: 'business_lines' })
export class BusinessLineEntity {
  @PrimaryColumn({ type: 'text' })
  name!: string;

  @Column({ type: 'text', default: '' })
  description!: string;

  @Column({ type: 'text' })
  owner!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}

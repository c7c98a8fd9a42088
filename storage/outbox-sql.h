/* outbox-sql.h - the SQL both backends' outbox.c share (migration 0015: one row a
 * notification, each channel's delivery in columns of its own). Not for other components.
 */
#ifndef CARDPOST_OUTBOX_SQL_H
#define CARDPOST_OUTBOX_SQL_H

/* The two texts of a statement about one channel, `SQL(ch, c, dest)` with ch its columns'
 * prefix, c its number (enum store_channel) and dest its destination's column (the email's
 * is the relay: '' for every row; the row's `destination` is its webhook's). */
#define OUTBOX_PER_CHANNEL(SQL) {SQL("email", "0", "''"), SQL("webhook", "1", "destination")}

/* A number of store.h as SQL text: OUTBOX_NUMBER(STORE_RECOVER_BATCH) is "512". */
#define OUTBOX_NUMBER(n) OUTBOX_DIGITS(n)
#define OUTBOX_DIGITS(n) #n

/* The columns of a row that every read returns, in this order: what the notification is,
 * then each channel's delivery (OUTBOX_ROW_CHANNEL columns each, email's first). */
#define OUTBOX_ROW_LIST                                                                        \
    " id, player_id, type, coalesce(match_id, 0), coalesce(seq, 0), webhook_id, body,"         \
    " created_at, coalesce(seat, -1), coalesce(deadline, 0), destination,"                     \
    " email_status, email_attempts, coalesce(email_next, 0),"                                  \
    " coalesce(email_delivered_at, 0), email_error,"                                           \
    " webhook_status, webhook_attempts, coalesce(webhook_next, 0),"                            \
    " coalesce(webhook_delivered_at, 0), webhook_error "
#define OUTBOX_ROW_COMMON 11  /* the columns before the channels' */
#define OUTBOX_ROW_CHANNEL 5  /* each channel's */

#endif

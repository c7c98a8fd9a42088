/* render.h - a seat's view as plain text, for emails: generic over the games (it walks the
 * view JSON the engine emits), so the service needs nothing game-specific.
 */
#ifndef CARDPOST_RENDER_H
#define CARDPOST_RENDER_H

#include <jansson.h>

/* The text of a match view as GET /v1/matches/{id} returns it (game, players, totals
 * against the target, the game's view, the legal moves, the deadline). `public_url` (or
 * NULL) is the service's base URL for links. A new string; free it. NULL without memory. */
char *render_match_text(const json_t *match_view, const char *public_url);

/* It lists every legal move when there are at most RENDER_LEGAL_ALL of them, else the first
 * RENDER_LEGAL_FEW and how many there are in all. So a view of only those, with their number
 * in all as "legal_count" (api_match_view_text_cut), renders the same text as the whole
 * view, and is a fraction of it to read (a Hearts pass has 286). */
#define RENDER_LEGAL_ALL 40
#define RENDER_LEGAL_FEW 12

#endif

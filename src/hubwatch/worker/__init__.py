"""Work across workers: discovery (which repos changed, from listings and webhooks) and the
worker loop that claims due repos under a lease and polls them."""

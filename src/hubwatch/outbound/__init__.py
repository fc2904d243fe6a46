"""What hubwatch sends out: its User-Agent, timeouts no caller lifts, the addresses allowed."""

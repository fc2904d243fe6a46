"""Local stand-ins for the services hubwatch calls, such as the Hugging Face Hub."""

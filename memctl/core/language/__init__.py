"""Text in English and Chinese: clipping, sentences, index tokens, token estimates."""

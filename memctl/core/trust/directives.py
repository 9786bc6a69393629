"""Does a note read as an instruction aimed at the agent itself, rather than about the project?

"Run pnpm test before committing" is a project's procedure and stays a note. What redirects the
agent is different: overriding its instructions ("ignore previous instructions", 忽略之前的指令),
hiding things from the user, a new role or task, addressing the AI as such ("if you are an AI
reading this"), tool-call markup, sending secrets or files to a URL, piping the network into a
shell, or a base64 payload to decode and run. `directive_reason` names the first such pattern.

Text is read as a reader sees it (NFKC, format characters gone, look-alike letters folded),
also with spaced-out letters joined and digits read as letters ("1gn0re"), and base64 runs
are decoded and read again.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import unicodedata

from memctl.core.trust.fence import fold, strip_format

_F = re.IGNORECASE | re.DOTALL

_AI = (
    r"(?:ai|a\.i\.|llm|language model|assistant|chatbot|agent|claude|chatgpt|gpt|copilot|"
    r"gemini|codex|cursor|model)s?"
)
_PRIOR = (
    r"(?:all\s+)?(?:the\s+|your\s+|any\s+|of\s+the\s+)?(?:previous|prior|above|earlier|preceding|"
    r"former|original|existing|system|developer|safety|user'?s?)"
)
_RULES = r"(?:instructions?|prompts?|rules|directives?|directions|guidelines|context|messages?|constraints|guardrails|policies)"
_DROP = (
    r"(?:ignore|disregard|forget|override|bypass|dismiss|discard|abandon|set\s+aside|put\s+aside|"
    r"throw\s+out|pay\s+no\s+(?:attention|heed|mind)\s+to|(?:do\s+not|don'?t|no\s+longer|"
    r"stop)\s+(?:follow|obey|heed|respect)(?:ing)?)"
)
_GUIDANCE = (
    r"(?:instructions?|guidance|guidelines|directives?|directions|orders|commands|prompts?|"
    r"system\s+prompt|rules|policies|constraints)"
)
_EARLIER = (
    r"(?:(?:all\s+)?(?:the\s+|your\s+|any\s+)?(?:previous|prior|earlier|above|preceding|former|"
    r"original|initial|existing|old|system|developer)|(?:you|the\s+agent)\s+(?:were|was|have\s+"
    r"been|'ve\s+been)\s+(?:given|told|taught)|(?:given|told)\s+(?:to\s+you\s+)?(?:before|earlier"
    r"|previously|above)|up\s+to\s+now|so\s+far)"
)
_SECRET = (
    r"(?:secrets?|tokens?|api[\s_-]?keys?|keys?|passwords?|credentials?|\.env\b|env(?:ironment)?"
    r"[\s_-]*(?:var(?:iable)?s?|file)|ssh|id_rsa|id_ed25519|private key|aws|\.npmrc|\.netrc|"
    r"cookies?|session|/etc/passwd|shell history|bash_history|~/\.|\$home|\$\{?[a-z_]*"
    r"(?:key|token|secret|pass)[a-z_]*)"
)
_SEND = (
    r"(?:send|sent|post|upload|exfiltrat|transmit|forward|e-?mail|leak|copy|copie|ship|push|"
    r"report|pipe|submit|beacon|dump)(?:s|es|ed|d|ing|e)?"
)
_DEST = r"(?:https?://|ftp://|webhook|pastebin|ngrok|requestbin|[\w.-]+\.(?:com|net|io|xyz|ru|cn|top|site|app)\b|@[\w-]+\.|\bto\s+(?:this|my|our|the\s+following)\s+(?:url|server|endpoint|address))"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "overrides the agent's instructions",
        re.compile(
            rf"\b(?:ignore|disregard|forget|override|bypass|skip|drop|abandon|discard)\s+{_PRIOR}\s*{_RULES}"
            rf"|\b(?:ignore|disregard|forget)\s+(?:everything|anything|all)\s+(?:you\s+were\s+told|above|before|said)"
            rf"|\bnew\s+(?:system\s+)?instructions?\s*[:：]|\bsystem\s+(?:prompt|override|message)\s*[:：]"
            rf"|\byour\s+(?:real|true|new|actual)\s+(?:instructions?|task|goal|purpose|role|objective)\b"
            rf"|\bfrom\s+now\s+on,?\s+(?:you|the\s+{_AI})\s+(?:are|will|must|should|shall)\b"
            rf"|\byou\s+are\s+now\s+(?:a|an|in|dan|the)\b|\bdeveloper\s+mode\b|\bjailbr(?:ea|o)k"
            rf"|\bdo\s+anything\s+now\b|\b(?:reveal|print|show|output|repeat)\s+(?:your|the)\s+(?:system\s+)?prompt",
            _F,
        ),
    ),
    (
        "overrides the agent's instructions",
        re.compile(
            r"(?:忽略|无视|忽视|不要理会|忘记|忘掉|抛开|跳过)(?:掉)?(?:你)?(?:之前|以上|上面|先前|前面|此前|原来|原有|所有|全部|前述|系统)"
            r"(?:的)?(?:所有|全部|一切)?(?:的)?(?:指令|指示|说明|规则|提示|要求|设定|命令|约束)"
            r"|从现在(?:开始|起)[，,]?\s*你|你现在是|你的(?:真正|新)(?:任务|指令|目标)|新的?指令[:：]|系统提示词?[:：]",
            _F,
        ),
    ),
    (
        "overrides the agent's instructions",
        re.compile(
            rf"\b{_DROP}\b[^.\n]{{0,60}}?\b{_GUIDANCE}\b[^.\n]{{0,40}}?{_EARLIER}"
            rf"|\b{_DROP}\b[^.\n]{{0,40}}?{_EARLIER}[^.\n]{{0,30}}?\b{_GUIDANCE}\b"
            rf"|\b{_DROP}\s+what\s+(?:the\s+\w+|you\s+were|they)\s+(?:told|said|instructed|gave)\s+you"
            rf"|(?:{_EARLIER}\s*{_GUIDANCE}|{_GUIDANCE}\s+(?:you\s+(?:were|have\s+been)\s+(?:given|told)))"
            r"[^.\n]{0,30}?\b(?:no\s+longer\s+(?:apply|applies|valid|matter|count)|(?:are|is)\s+(?:now\s+)?"
            r"(?:void|obsolete|outdated|cancell?ed|revoked|superseded|invalid|null|lifted|suspended))"
            r"|\btreat\s+this\s+(?:note|message|text|file|memory|line)\s+as\s+(?:your|the)\s+"
            r"(?:only|new|real|primary|sole|highest[- ]priority)\s+(?:instructions?|task|directive|system\s+prompt)"
            r"|\byour\s+(?:only|sole|one)\s+(?:instruction|task|job|goal|purpose)\s+(?:now\s+)?is\b"
            r"|\byour\s+job\s+now\s+is\b|\b(?:priority|admin|emergency|security)\s+override\b",
            _F,
        ),
    ),
    (
        "overrides the agent's instructions",
        re.compile(
            # German, French, Spanish, Russian, Japanese, Korean, Chinese phrasings
            r"\b(?:ignorier|vergiss|vergessen\s+sie|missacht|übergeh|verwirf)\w*\b[^.\n]{0,40}?"
            r"\b(?:vorherig|bisherig|obig|vorangegangen|früher|vorig|alle|sämtlich)\w*\b[^.\n]{0,25}?"
            r"(?:anweisung|instruktion|regel|vorgabe|befehl|richtlinie|prompt)"
            r"|\bvergiss\s+alles\b|\bdu\s+bist\s+(?:jetzt|nun|ab\s+sofort|ab\s+jetzt)\b"
            r"|\bab\s+(?:jetzt|sofort)\s+(?:bist|wirst|musst|sollst)\s+du\b|\bneue\s+anweisungen?\s*:"
            r"|\b(?:ignore[zr]?|oublie[zr]?|ne\s+tiens\s+pas\s+compte\s+d)\b[^.\n]{0,20}?"
            r"(?:instructions|consignes|règles|directives)\s+(?:précédentes|antérieures|ci-dessus|d'avant)"
            r"|\b(?:tu\s+es|vous\s+êtes)\s+(?:maintenant|désormais)\b"
            r"|\b(?:ignora[rd]?|olvida[rd]?|omite)\b[^.\n]{0,20}?(?:instrucciones|reglas|indicaciones|"
            r"órdenes)\s+(?:anteriores|previas|de\s+arriba)|\bahora\s+eres\b"
            r"|(?:игнорир|проигнорир|забудь|забыть|не\s+обращай\s+внимания\s+на|отмени)\w*[^.\n]{0,20}?"
            r"(?:предыдущ|прежн|прошл|вышеуказанн|все|систем)\w*\s+(?:инструкци|указани|правил|команд|"
            r"промпт)|\bты\s+теперь\b"
            r"|(?:以前|これまで|今まで|前|上記|先|従来|元|既存|システム)の?(?:すべての|全ての|全)?"
            r"(?:指示|命令|ルール|指令|プロンプト|設定|制約)(?:は|を)?(?:すべて|全て)?(?:無視|忘れ|破棄)"
            r"|(?:あなた|君|お前)は(?:今から|これから|今後)|新しい指示[:：]|システムプロンプトを(?:表示|出力|教え)"
            r"|(?:이전|앞의|위의|기존|모든)\s*(?:의\s*)?(?:모든\s*)?(?:지시|명령|지침|규칙|설정)[을를은는]?\s*"
            r"(?:모두\s*)?(?:무시|잊)|지금부터\s*(?:너는|당신은)"
            r"|(?:忽略|无视|忽视|不要理会|忘记|忘掉|抛开|跳过|不要遵守|不再遵守|无需遵守)[^。\n]{0,12}?"
            r"(?:之前|以上|上面|先前|前面|此前|原来|原有|前述|系统|收到的|已有)[^。\n]{0,8}?"
            r"(?:指令|指示|说明|规则|提示|要求|设定|命令|约束)",
            _F,
        ),
    ),
    (
        "hides something from the user",
        re.compile(
            r"\b(?:sag|erzähl|verrat)\w*\s+(?:dem|der|den)\s+(?:benutzer|nutzer|anwender)\w*\s+nichts"
            r"|\bohne\s+(?:dass\s+)?(?:es\s+)?(?:der|den|die)\s+(?:benutzer|nutzer|anwender)"
            r"|\bne\s+(?:le\s+)?dis\s+rien\s+à\s+l'utilisateur|\bsans\s+(?:le\s+)?(?:dire|prévenir)"
            r"\s+(?:à\s+)?l'utilisateur|\bsin\s+(?:decirle|avisar)\w*\s+al\s+usuario"
            r"|\bне\s+(?:говори|сообщай)\s+пользователю"
            r"|ユーザー(?:に|には)(?:言わ|伝え|知らせ|教え)ないで|(?:こっそり|密かに|秘密裏に)"
            r"(?:送信|実行|アップロード|追加|インストール)|사용자에게\s*(?:알리지|말하지)\s*마",
            _F,
        ),
    ),
    (
        "hides something from the user",
        re.compile(
            r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|notify|mention\s+(?:this\s+|it\s+)?to|"
            r"reveal\s+(?:this\s+|it\s+)?to|show\s+(?:this\s+|it\s+)?to|let)\s+the\s+user\b"
            r"|\bwithout\s+(?:telling|asking|informing|notifying|alerting|the\s+user'?s?\s+(?:knowledge|consent))"
            r"(?:\s+the\s+user)?\b|\b(?:secretly|covertly|quietly|silently)\s+(?:run|send|execute|upload|"
            r"add|install|insert|modify|post|copy|include|append|fetch|curl|call|delete|remove)"
            r"|\bthe\s+user\s+(?:has\s+)?(?:already\s+)?(?:authori[sz]ed|approved|consented|wants\s+you\s+to)"
            r"|不要(?:告诉|通知|提醒|让)用户|(?:偷偷|悄悄|秘密)地?(?:执行|运行|发送|上传|添加|安装|修改)",
            _F,
        ),
    ),
    (
        "addresses the AI reading it",
        re.compile(
            rf"\bif\s+you\s+are\s+(?:an?\s+|the\s+)?{_AI}\b|\b(?:any|all|every)\s+{_AI}\s+(?:reading|that\s+reads|processing)\b"
            rf"|\b(?:attention|note|message|instructions?|important)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?{_AI}\b"
            rf"|^\W*(?:hey|hi|dear|attention|note\s+to)?,?\s*(?:the\s+)?(?:ai|assistant|claude|llm|chatgpt|gpt|copilot)\s*[,!:]\s*"
            rf"(?:you\s+)?(?:must|should|will|now|always|never|please|ignore|do|run|send|execute|from)\b"
            rf"|\b(?:when|once|as\s+soon\s+as)\s+(?:an?\s+|the\s+)?{_AI}\s+(?:reads?|sees?|processes|loads?)\s+this"
            rf"|\b{_AI}\s+(?:must|should|will|shall)\s+(?:always\s+)?(?:respond|reply|answer|say|output|append|include\s+in\s+(?:every|each|all))"
            rf"|\b(?:in|at\s+the\s+end\s+of|start)\s+every\s+(?:response|reply|answer|message)"
            r"|如果你是(?:一个)?(?:ai|人工智能|助手|大模型|语言模型|智能体)|(?:ai|助手|智能体|大模型)[，,:：]\s*(?:请|你必须|你应该|必须)",
            _F | re.MULTILINE,
        ),
    ),
    (
        "imitates a conversation turn or the notes fence",
        re.compile(
            r"^[ \t>#*_\-]*(?:human|assistant|system|developer|用户|助手|系统)\s*[:：]"
            r"|^[ \t>#*_]*(?:system|developer|admin)(?:\s+(?:message|prompt|notice|override|update|"
            r"instruction))?\s+-+\s|^[ \t>#*_\-]*\[\s*(?:system|sys|admin|developer)\s*\]"
            r"|<\s*/?\s*memctl[\s_\-]*notes\b"
            r"|<\s*/?\s*(?:memctl-notes|system|assistant|user|human|instructions?|system-reminder|"
            r"im_start|im_end)\b|<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>"
            r"|\[/?inst\]|<<\s*/?sys\s*>>",
            _F | re.MULTILINE,
        ),
    ),
    (
        "tool-call markup or a tool-use directive",
        re.compile(
            r"<\s*/?\s*(?:function_calls|invoke|tool_use|tool_call|tool_result|antml:[a-z_]+|parameter\s+name)"
            r"|\"type\"\s*:\s*\"tool_use\"|\btool_use_id\b"
            r"|\b(?:use|call|invoke|trigger)\s+(?:the\s+)?(?:\w+\s+)?tool\s+(?:to\s+)?(?:immediately|now|right\s+away|before|first)"
            r"|\b(?:immediately|right\s+now|now|first|before\s+(?:responding|answering|replying|doing\s+anything(?:\s+else)?))"
            r",?\s+(?:run|execute|call|invoke|use\s+the\s+\w+\s+tool\s+to)\s+(?:the\s+following|this|`)"
            r"|\b(?:run|execute)\s+(?:the\s+following|this)\s+(?:command|script|code)\s+(?:immediately|now|silently|"
            r"before\s+(?:responding|answering|replying|doing\s+anything)|without)"
            r"|(?:立即|马上|立刻)(?:执行|运行|调用)(?:以下|下面|这个)",
            _F,
        ),
    ),
    (
        "sends secrets or files somewhere",
        re.compile(
            rf"\b{_SEND}\b[^.\n]{{0,80}}?{_SECRET}[^.\n]{{0,80}}?{_DEST}"
            rf"|\b{_SEND}\b[^.\n]{{0,60}}?{_DEST}[^.\n]{{0,60}}?{_SECRET}"
            r"|\bcurl\b[^|\n]{0,160}?\s(?:-d|--data(?:-binary|-raw|-urlencode)?|-F|--form|-T|--upload-file)\s*"
            r"[\"']?(?:@|\$\(|`|\$\{?[A-Z_]*(?:KEY|TOKEN|SECRET|PASS|AWS|ENV)|[^\s]*(?:\.env|id_rsa|passwd|\.ssh|credentials))"
            r"|\b(?:env|printenv|set|cat\s+[^|\n]*(?:\.env|id_rsa|\.ssh|credentials|\.npmrc|\.netrc|passwd))\s*\|\s*"
            r"(?:curl|wget|nc|ncat|netcat|base64)\b"
            r"|把[^。\n]{0,40}?(?:密钥|令牌|密码|环境变量|\.env|凭证|私钥|token|key)[^。\n]{0,40}?(?:发送|上传|发到|传到|提交)"
            r"|(?:发送|上传|发到|传到)[^。\n]{0,40}?(?:密钥|令牌|密码|环境变量|\.env|凭证|私钥)[^。\n]{0,40}?(?:https?://|服务器|网址)",
            _F,
        ),
    ),
    (
        "pipes the network into a shell",
        re.compile(
            r"\b(?:curl|wget|fetch|iwr|invoke-webrequest)\b[^\n;]{0,200}?\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b"
            r"|\b(?:curl|wget)\b[^\n;]{0,200}?\|\s*(?:sudo\s+)?(?:python3?|perl|ruby|node|iex|powershell)\b"
            r"|\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?\$\(\s*(?:curl|wget)\b|\beval\s+[\"']?\$\(\s*(?:curl|wget)\b"
            r"|\b(?:nc|ncat|netcat)\b[^\n]{0,80}?\s-(?:e|c)\s|\|\s*(?:nc|ncat|netcat)\s+[\w.-]+\s+\d+"
            r"|/dev/tcp/|\bbase64\s+(?:-d|--decode|-D)\b[^\n]{0,40}?\|\s*(?:ba|z)?sh\b"
            r"|\bmkfifo\b[^\n]{0,80}?\b(?:nc|ncat|netcat)\b",
            _F,
        ),
    ),
    (
        "asks to decode and follow a hidden payload",
        re.compile(
            r"\bdecode\s+(?:this|the\s+following|it|the\s+(?:string|payload|text))\b[^.\n]{0,60}?"
            r"\b(?:run|execute|follow|obey|do\s+what|carry\s+out)"
            r"|\b(?:run|execute|follow)\b[^.\n]{0,40}?\bbase64[- ]?(?:encoded|decoded)?\b"
            r"|解码[^。\n]{0,30}?(?:执行|运行|照做|遵循)",
            _F,
        ),
    ),
)

_SPACED = re.compile(r"(?:\b\w[ .\-_]){5,}\w\b")
_LEET = str.maketrans("013457@$", "oieastas")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")
# A piece of a base64 payload cut into parts: 8+ characters with a digit, `+`/`/`, or a capital
# after a small letter (what encoded text nearly always has and a plain word rarely does).
_BASE64_PIECE = re.compile(
    r"(?<![\w+/])(?=[A-Za-z0-9+/]*(?:[0-9+/]|[a-z][A-Z]))[A-Za-z0-9+/]{8,}={0,2}(?![\w+/])"
)
# Pieces of 4+ base64 characters cut by spaces or line breaks (a payload split to hide it).
_CHAIN = re.compile(r"(?:[A-Za-z0-9+/]{4,}={0,2}[ \t\r\n]+){2,}[A-Za-z0-9+/]{2,}={0,2}")
_ENTITY = re.compile(r"&(?:#\d{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});", re.IGNORECASE)
_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)
# Speaker labels memctl writes itself when it quotes a conversation (see own_labels below).
_OWN_LABEL = re.compile(
    r"^([ \t>*_\-]*)(?:user|assistant|agent|claude|tool(?:\s+output)?|用户|助手)\s*[:：]",
    re.IGNORECASE | re.MULTILINE,
)


def _views(text: str) -> list[str]:
    """The text as a reader could take it: folded, unescaped, despaced, de-leeted, decoded."""
    plain = strip_format(text)
    if _ENTITY.search(plain):
        # &#73;gnore, &lt;/system&gt;: twice, for text escaped twice
        plain = strip_format(html.unescape(html.unescape(plain)))
    folded = fold(plain)
    views = [folded]
    if folded != plain:
        views.append(plain)  # Cyrillic and Greek read as themselves (Russian, Greek phrasings)
    stripped = "".join(
        ch for ch in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(ch)
    )
    if stripped != folded:
        views.append(stripped)  # ïgnörë
    if _SPACED.search(folded):
        # "i g n o r e  a l l": one space or dot inside a word, two or more between words
        words = re.sub(r"[ \t]{2,}", "\x00", folded)
        views.append(re.sub(r"(?<=\w)[ .\-_](?=\w\b)", "", words).replace("\x00", " "))
    leet = folded.lower().translate(_LEET)
    if leet != folded.lower():
        views.append(leet)
    views.append(folded.translate(_ROT13))
    runs = _BASE64.findall(folded)
    pieces = _BASE64_PIECE.findall(folded)
    if len(pieces) > 1:
        runs.append("".join(piece.rstrip("=") for piece in pieces))
    for chain in _CHAIN.findall(folded):
        tokens = chain.split()
        # a label word or two may stand before the payload's first piece
        runs += ["".join(tokens[start:]) for start in range(min(3, len(tokens) - 1))]
    for run in runs:
        decoded = _decode(run)
        if decoded:
            views.append(fold(decoded))
    return views


def _decode(run: str) -> str:
    try:
        raw = base64.b64decode(run + "=" * (-len(run) % 4), validate=False)
    except (binascii.Error, ValueError):
        return ""
    text = raw.decode("utf-8", errors="replace")
    printable = sum(ch.isprintable() or ch.isspace() for ch in text if ch != "\ufffd")
    return text if text and printable / len(text) > 0.85 else ""


def directive_reason(text: str, own_labels: bool = False) -> str | None:
    """Why `text` reads as an instruction to the agent itself; None when it does not.

    `own_labels`: the text is memctl's own quote of a conversation (an episode), whose
    `User:` / `Assistant:` line labels memctl wrote; they are not a forged turn."""
    if own_labels:
        text = _OWN_LABEL.sub(r"\1", text)
    for view in _views(text):
        for reason, pattern in _PATTERNS:
            if pattern.search(view):
                return reason
    return None


def joined_reason(texts: list[str]) -> list[tuple[int, str]]:
    """(i, why) for each pair texts[i], texts[i + 1] that reads as an instruction to the agent
    only when joined: one instruction cut in two memories (same origin, written one after
    the other). A text that reads as one alone is quarantined on its own already."""
    alone = [directive_reason(text) is not None for text in texts]
    found = []
    for i in range(len(texts) - 1):
        if alone[i] or alone[i + 1]:
            continue
        reason = directive_reason(f"{texts[i].rstrip()} {texts[i + 1].lstrip()}")
        if reason is None:
            # the two halves of a base64 payload, or of a word
            reason = directive_reason(f"{texts[i].rstrip()}{texts[i + 1].lstrip()}")
        if reason is not None:
            found.append((i, reason))
    return found

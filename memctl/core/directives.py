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
import re

from memctl.core.fence import fold

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


def _views(text: str) -> list[str]:
    folded = fold(text)
    views = [folded]
    if _SPACED.search(folded):
        # "i g n o r e  a l l": one space or dot inside a word, two or more between words
        words = re.sub(r"[ \t]{2,}", "\x00", folded)
        views.append(re.sub(r"(?<=\w)[ .\-_](?=\w\b)", "", words).replace("\x00", " "))
    leet = folded.lower().translate(_LEET)
    if leet != folded.lower():
        views.append(leet)
    for run in _BASE64.findall(folded):
        decoded = _decode(run)
        if decoded:
            views.append(fold(decoded))
    return views


def _decode(run: str) -> str:
    try:
        raw = base64.b64decode(run + "=" * (-len(run) % 4), validate=False)
        text = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return ""
    printable = sum(ch.isprintable() or ch.isspace() for ch in text)
    return text if text and printable / len(text) > 0.9 else ""


def directive_reason(text: str) -> str | None:
    """Why `text` reads as an instruction to the agent itself; None when it does not."""
    for view in _views(text):
        for reason, pattern in _PATTERNS:
            if pattern.search(view):
                return reason
    return None
